"""A whole scripted fix-a-bug session: read, edit, run the tests, answer — checked on disk and on the wire."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from agent_helpers import assert_valid_request, session_messages

from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalRequested,
    ToolCallFinished,
    TurnEnded,
    TurnEndReason,
)
from catbuddy.context.governance.governor import FixedPart, govern_context
from catbuddy.messages import strip_runtime_block
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('all tests passed')\n"


def fix_script() -> list:
    test_command = f"{shlex.quote(sys.executable)} test_calc.py"
    return [
        Reply.tool_call("read_file", {"path": "calc.py"}, text="Let me look."),
        Reply.tool_call("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        Reply.tool_call("exec", {"command": test_command}),
        Reply.text("Fixed: `add` subtracted instead of adding; the tests pass now."),
    ]


def make_project(workspace: Workspace) -> Path:
    (workspace.work_root / "calc.py").write_text(BUGGY)
    (workspace.work_root / "test_calc.py").write_text(TESTS)
    return workspace.work_root / "calc.py"


async def test_a_scripted_session_fixes_the_bug_on_disk_and_persists_every_step(
    workspace, scripted_llm, make_loop
):
    calc = make_project(workspace)
    scripted_llm.push(*fix_script())
    loop, events = await make_loop(scripted_llm, approval="yolo")

    outcome = await loop.run_turn("The tests in test_calc.py fail. Fix the bug.")

    assert outcome.reason is TurnEndReason.DONE
    assert outcome.iterations == 4
    assert calc.read_text() == "def add(a, b):\n    return a + b\n"
    finished = events.of(ToolCallFinished)
    assert [f.name for f in finished] == ["read_file", "edit_file", "exec"]
    assert "all tests passed" in finished[2].result and not finished[2].is_error

    messages = session_messages(loop)
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool"] * 3 + ["assistant"]
    user = messages[0]["content"]
    assert user.startswith("The tests in test_calc.py fail. Fix the bug.\n\n[runtime: ")
    assert strip_runtime_block(user) == "The tests in test_calc.py fail. Fix the bug."
    calls = [m["tool_calls"][0] for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    assert [c["function"]["name"] for c in calls] == ["read_file", "edit_file", "exec"]
    results = [m for m in messages if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == [c["id"] for c in calls]
    assert "return a - b" in results[0]["content"]
    assert messages[1]["content"] == "Let me look."
    assert messages[-1]["content"].startswith("Fixed: `add` subtracted")
    assert [entry.message for entry in loop.transcript()] == messages


async def test_each_request_is_the_system_prompt_plus_every_persisted_message_byte_for_byte(
    workspace, scripted_llm, make_loop
):
    make_project(workspace)
    scripted_llm.push(*fix_script(), Reply.text("You're welcome."))
    loop, _ = await make_loop(scripted_llm, approval="yolo")
    await loop.run_turn("Fix the bug.")
    await loop.run_turn("Thanks!")

    persisted = session_messages(loop)
    requests = scripted_llm.requests
    assert len(requests) == 5
    system = {"role": "system", "content": loop.builder.build(loop.channel).text}
    tools = loop.registry.schemas()
    for request in requests:
        sent = request.messages
        assert sent[0] == system
        assert_valid_request(sent)
        # The history part is exactly what was persisted before this call, in order.
        assert sent[1:] == persisted[: len(sent) - 1]
        # …and exactly what governance produces from it (nothing to change in so short a session).
        governed = govern_context(
            persisted[: len(sent) - 1],
            FixedPart(system["content"], tools),
            loop.turn_context().budget,
            loop.turn_context().counter,
            compactable=loop.registry.microcompactable(),
        )
        assert governed.messages == sent
        assert request.tools == tools

    # The prompt-cache property: every later request starts with the earlier one, byte for byte.
    wire = [json.dumps(r.messages, ensure_ascii=False) for r in requests]
    for earlier, later in zip(requests, requests[1:], strict=False):
        assert later.messages[: len(earlier.messages)] == earlier.messages
    first_user = json.dumps(requests[0].messages[1], ensure_ascii=False)
    assert all(first_user in text for text in wire[1:])
    assert requests[-1].messages[-1]["content"].startswith("Thanks!\n\n[runtime: ")


async def test_auto_edit_mode_edits_without_asking_and_asks_before_running_the_tests(
    workspace, scripted_llm, make_loop
):
    calc = make_project(workspace)
    scripted_llm.push(*fix_script())
    loop, events = await make_loop(scripted_llm, approval="auto-edit")
    asked: list[ApprovalRequested] = []

    def answer(event: object) -> None:
        if isinstance(event, ApprovalRequested):
            asked.append(event)
            loop.answer_approval(event.call_id, ApprovalChoice.ALLOW_ONCE)

    events.on = answer
    outcome = await loop.run_turn("Fix the bug.")

    assert outcome.reason is TurnEndReason.DONE
    assert [a.name for a in asked] == ["exec"]
    assert "test_calc.py" in asked[0].preview
    assert calc.read_text().endswith("return a + b\n")
    assert "all tests passed" in events.of(ToolCallFinished)[-1].result
    assert events.of(TurnEnded)[-1].text.startswith("Fixed")
