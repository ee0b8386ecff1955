"""Approvals through the event stream: each choice, session memory, headless refusal, deny rules."""

from __future__ import annotations

import asyncio

import pytest
from agent_helpers import session_events

from catbuddy.agent.approval import HEADLESS_REFUSAL, headless_refusal
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalRequested,
    ApprovalResolved,
    ToolCallFinished,
    TurnEndReason,
)
from catbuddy.config import ToolSettings
from catbuddy.testing.script import Reply

ASK_FOR_READS = ToolSettings(auto_allow_read_only=False)  # so that `echo` asks in `ask` mode


def answering(loop, choice: ApprovalChoice, note: str = "", asked: list | None = None):
    """A front end that answers every approval request with ``choice`` as soon as it is announced."""

    def listener(event: object) -> None:
        if isinstance(event, ApprovalRequested):
            if asked is not None:
                asked.append(event)
            assert loop.answer_approval(event.call_id, choice, note)

    return listener


async def test_allow_once_runs_the_command_after_asking(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch made.txt"}), Reply.text("done"))
    loop, events = await make_loop(scripted_llm, approval="ask")
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.ALLOW_ONCE, asked=asked)

    outcome = await loop.run_turn("make a file")

    assert outcome.reason is TurnEndReason.DONE
    assert len(asked) == 1 and asked[0].name == "exec"
    assert asked[0].preview == "touch made.txt" and asked[0].suggested_pattern == "touch"
    assert (workspace.work_root / "made.txt").exists()
    assert session_events(loop, "approval_resolved")[0].data["decision"] == "allow_once"


async def test_allow_once_asks_again_for_the_next_matching_call(workspace, scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_call("exec", {"command": "echo one"}),
        Reply.tool_call("exec", {"command": "echo two"}),
        Reply.text("done"),
    )
    loop, events = await make_loop(scripted_llm, approval="ask", tools=ASK_FOR_READS)
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.ALLOW_ONCE, asked=asked)

    await loop.run_turn("echo twice")

    assert [a.preview for a in asked] == ["echo one", "echo two"]


async def test_allow_for_the_session_does_not_ask_again_for_a_matching_call(
    workspace, scripted_llm, make_loop
):
    scripted_llm.push(
        Reply.tool_call("exec", {"command": "echo one"}),
        Reply.tool_call("exec", {"command": "echo two"}),
        Reply.text("done"),
    )
    loop, events = await make_loop(scripted_llm, approval="ask", tools=ASK_FOR_READS)
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.ALLOW_SESSION, asked=asked)

    await loop.run_turn("echo twice")

    assert [a.preview for a in asked] == ["echo one"]
    results = [e.result for e in events.of(ToolCallFinished)]
    assert results[0].startswith("one") and results[1].startswith("two")
    assert "echo" in loop.policy.remembered


async def test_deny_refuses_the_call_and_tells_the_model(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch nope.txt"}), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm, approval="ask")
    events.on = answering(loop, ApprovalChoice.DENY)

    outcome = await loop.run_turn("make a file")

    assert outcome.reason is TurnEndReason.DONE
    assert not (workspace.work_root / "nope.txt").exists()
    result = scripted_llm.requests[1].messages[-1]
    assert result["role"] == "tool" and result["content"].startswith("The user denied this call.")
    assert events.of(ToolCallFinished)[0].is_error


async def test_a_denial_tells_the_model_why_the_call_needed_approval(workspace, scripted_llm, make_loop):
    # Issue 27: every decision explains itself in the refusal the model gets, the user's "no" included.
    scripted_llm.push(Reply.tool_call("exec", {"command": "git reset --hard"}), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm, approval="auto-edit")
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.DENY, asked=asked)

    await loop.run_turn("start over")

    assert asked[0].reason.startswith("destructive:")
    result = scripted_llm.requests[1].messages[-1]["content"]
    assert result.endswith(f"Why it needed approval: {asked[0].reason}")


async def test_deny_with_a_note_passes_the_note_to_the_model(workspace, scripted_llm, make_loop):
    (workspace.work_root / "a.py").write_text("x = 1\n")
    scripted_llm.push(
        Reply.tool_call("edit_file", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}),
        Reply.text("ok"),
    )
    loop, events = await make_loop(scripted_llm, approval="ask")
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.DENY_WITH_NOTE, "use 3, not 2", asked=asked)

    await loop.run_turn("change x")

    assert "-x = 1" in asked[0].preview and "+x = 2" in asked[0].preview
    assert (workspace.work_root / "a.py").read_text() == "x = 1\n"
    result = scripted_llm.requests[1].messages[-1]["content"]
    assert result.startswith("The user denied this call and said: use 3, not 2")
    assert session_events(loop, "approval_resolved")[0].data["note"] == "use 3, not 2"


@pytest.mark.parametrize(
    ("tool", "args"),
    [("exec", {"command": "touch x.txt"}), ("write_file", {"path": "x.txt", "content": "hi"})],
)
async def test_headless_ask_mode_refuses_exec_and_writes_without_blocking(
    workspace, scripted_llm, make_loop, tool, args
):
    scripted_llm.push(Reply.tool_call(tool, args), Reply.text("I could not."))
    loop, events = await make_loop(scripted_llm, approval="ask", interactive=False, channel="headless")

    outcome = await asyncio.wait_for(loop.run_turn("make x.txt"), 15)

    assert outcome.reason is TurnEndReason.DONE
    [request] = events.of(ApprovalRequested)
    assert not request.answerable  # announced for stream-json readers, never waited on
    [resolved] = events.of(ApprovalResolved)
    assert (resolved.call_id, resolved.decision) == (request.call_id, "refused_headless")
    assert not (workspace.work_root / "x.txt").exists()
    expected = headless_refusal(tool, "ask", request.reason)
    assert scripted_llm.requests[1].messages[-1]["content"] == expected
    assert expected.startswith(HEADLESS_REFUSAL.format(tool=tool, mode="ask"))
    assert "--approval yolo" in expected


async def test_a_headless_refusal_of_a_command_says_its_kind_and_why(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch x.txt"}), Reply.text("I could not."))
    loop, _ = await make_loop(scripted_llm, approval="ask", interactive=False, channel="headless")

    await asyncio.wait_for(loop.run_turn("make x.txt"), 15)

    refusal = scripted_llm.requests[1].messages[-1]["content"]
    assert "Why it needs approval: writes in the work root" in refusal


@pytest.mark.parametrize("command", ["rm -rf /", "echo ok && rm -rf ~", ":(){ :|:& };:"])
async def test_deny_patterns_are_refused_in_yolo_mode_too(workspace, scripted_llm, make_loop, command):
    scripted_llm.push(Reply.tool_call("exec", {"command": command}), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm, approval="yolo")

    await loop.run_turn("clean up")

    assert not events.of(ApprovalRequested)
    result = events.of(ToolCallFinished)[0]
    assert result.is_error and result.result.startswith("Refused by catbuddy's safety rules")
    assert session_events(loop, "approval_resolved")[0].data["decision"] == "denied_by_rule"


async def test_writing_a_session_file_is_refused_in_yolo_mode(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.text("placeholder"))
    loop, events = await make_loop(scripted_llm, approval="yolo")
    target = str(loop.session.path)
    scripted_llm.push(Reply.tool_call("write_file", {"path": target, "content": "{}"}), Reply.text("ok"))
    await loop.run_turn("hi")
    before = loop.session.path.read_bytes()

    await loop.run_turn("overwrite the session")

    result = events.of(ToolCallFinished)[0]
    assert result.is_error and "session files" in result.result
    assert loop.session.path.read_bytes().startswith(before)


async def test_an_answer_for_a_call_nobody_waits_on_is_refused(scripted_llm, make_loop):
    loop, _ = await make_loop(scripted_llm, approval="ask")

    assert loop.answer_approval("call_nobody_asked_about", ApprovalChoice.ALLOW_ONCE) is False


async def test_every_answer_is_announced_as_resolved(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "echo hi"}), Reply.text("done"))
    loop, events = await make_loop(scripted_llm, approval="ask", tools=ASK_FOR_READS)
    events.on = answering(loop, ApprovalChoice.DENY_WITH_NOTE, "not now")

    await loop.run_turn("say hi")

    [request] = events.of(ApprovalRequested)
    [resolved] = events.of(ApprovalResolved)
    assert (resolved.call_id, resolved.decision, resolved.note) == (request.call_id, "deny_with_note", "not now")
