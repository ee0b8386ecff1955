"""A long scripted session in a small window, through several compactions (docs/architecture.md §5):
afterwards every request still names every modified file, the last test status and each of the
user's rules in their own words; `recall` finds a marker only an early, folded tool result held;
and undoing the last compaction brings back the history exactly as it was before it."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from compaction_helpers import WHOLE, Brain, chat_requests

from catbuddy.agent.events import LoopState, StateChanged, TurnEndReason
from catbuddy.config import ContextSettings, ModelSpec
from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.session.history import rebuild_history
from catbuddy.session.records import CompactionRecord, read_session_file
from catbuddy.testing.script import Reply, ReplySpec

WINDOW, MAX_OUTPUT = 12_000, 1_000
MARKER = "ZEBRA-7731-QUOKKA"
RULES = [
    "Always run the tests with `python -m pytest -q` before you say something works.",
    "Never touch setup.cfg, whatever happens.",
]
TEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
FILLER = "Here is more context about the parser design that you should keep in mind. " * 30

# Each turn: the user's message, then the calls the model makes one after the other, then its answer.
CALC_BROKEN = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def turns() -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    plan: list[tuple[str, list[tuple[str, dict[str, Any]]]]] = [
        (RULES[0] + " " + RULES[1], []),
        ("Read notes.txt, it has the release code.", [("read_file", {"path": "notes.txt"})]),
        (
            "Create calc.py with an add function and a test for it.",
            [
                ("write_file", {"path": "calc.py", "content": CALC_BROKEN}),
                ("write_file", {"path": "tests/test_calc.py", "content": TEST_CALC}),
            ],
        ),
        ("Run the tests.", [("exec", {"command": TEST})]),
    ]
    plan += [(f"Background, part {i}: {FILLER}", []) for i in range(6)]
    plan += [
        (
            "Fix add and run the tests again.",
            [
                ("edit_file", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
                ("exec", {"command": TEST}),
            ],
        ),
        ("Write a small README for the module.", [("write_file", {"path": "docs/CALC.md", "content": "# calc\n\nadd(a, b)\n"})]),
        ("Remove the scratch file.", [("exec", {"command": "rm scratch.txt"})]),
    ]
    plan += [(f"More background, part {i}: {FILLER}", []) for i in range(8)]
    plan += [
        (
            "Add a sub function too.",
            [("edit_file", {"path": "calc.py", "old_string": "return a + b\n", "new_string": "return a + b\n\n\ndef sub(a, b):\n    return a - b\n"})],
        ),
        ("Run the tests once more.", [("exec", {"command": TEST})]),
    ]
    plan += [(f"Final background, part {i}: {FILLER}", []) for i in range(8)]
    plan += [("What was the release code in notes.txt?", [("recall", {"query": MARKER})])]
    return plan


PLAN = turns()
MODIFIED = ["calc.py", "tests/test_calc.py", "docs/CALC.md", "scratch.txt"]


def responder(body: dict[str, Any]) -> ReplySpec:
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    said = strip_runtime_block(content_text(messages[last_user]["content"]))
    index = next(i for i, (text, _) in enumerate(PLAN) if text == said)
    done = sum(1 for m in messages[last_user:] if m["role"] == "tool")
    calls = PLAN[index][1]
    if done < len(calls):
        name, args = calls[done]
        return Reply.tool_call(name, args, id=f"t{index}_{done}", chunk_size=WHOLE)
    return Reply.text(f"Done with step {index}.", chunk_size=WHOLE)


def text_of(request: Any) -> str:
    """Everything the model reads in a request: contents and the calls' arguments."""
    parts = []
    for message in request.messages:
        parts.append(content_text(message.get("content")))
        parts += [call["function"]["arguments"] for call in message.get("tool_calls") or ()]
    return "\n".join(parts)


@pytest.mark.parametrize("summarizer", ["the chat model", "another compact model"])
async def test_a_long_session_keeps_files_tests_rules_and_can_recall_and_undo(
    summarizer, scripted_llm_factory, make_loop, workspace
):
    (workspace.work_root / "notes.txt").write_text(f"release code: {MARKER}\n" + "padding line\n" * 300)
    (workspace.work_root / "scratch.txt").write_text("temporary\n")
    brain = Brain(reply=responder)
    llm = scripted_llm_factory([brain] * 400, context_window=WINDOW)
    context = ContextSettings(compact_message_threshold=30, compact_keep_recent=12)
    models = {"scripted": ModelSpec(WINDOW, MAX_OUTPUT), "summarizer": ModelSpec(WINDOW, MAX_OUTPUT)}
    other = {"compact_model": "summarizer"} if summarizer == "another compact model" else {}
    loop, events = await make_loop(llm, models=models, context=context, **other)
    snapshots: list[tuple[Any, list[Any]]] = []  # the working history as each compaction starts

    def snapshot(event: Any) -> None:
        if isinstance(event, StateChanged) and event.new is LoopState.COMPACT:
            history = loop.conversation.history
            snapshots.append((history.summary, [(e.id, e.message) for e in history.entries]))

    events.on = snapshot
    for number, (text, _) in enumerate(PLAN):
        outcome = await loop.run_turn(text)
        assert outcome.reason is TurnEndReason.DONE, number

    records = [r for r in read_session_file(loop.session.path).records if isinstance(r, CompactionRecord)]
    assert len(records) >= 3, "the session must go through at least three compactions"
    assert not llm.over_budget
    expected = "chunked" if other else "live_prefix"  # the whole history fitted each time
    assert {r.extra["mode"] for r in records} == {expected}
    assert all(r.extra["ledger"]["changes"] for r in records[1:])

    # every request keeps each rule in the user's own words
    for request in chat_requests(llm)[1:]:
        for rule in RULES:
            assert rule in text_of(request), (request.index, rule)

    # every request after a file changed names it
    for path in MODIFIED:
        changed_at = _first_request_after_tool_call(llm, path)
        for request in chat_requests(llm):
            if request.index > changed_at:
                assert path in text_of(request), (request.index, path)

    # the last test status (the first run failed, the later ones passed)
    last_test = _last_request_after_tool_call(llm, "Run the tests once more.")
    for request in chat_requests(llm):
        if request.index > last_test:
            text = text_of(request)
            assert "→ passed (exit 0)" in text or ("1 passed" in text and "Exit code: 0" in text), request.index

    # recall found the marker that only the folded read_file result held
    final = chat_requests(llm)[-1]
    recall_result = final.messages[-1]
    assert recall_result["role"] == "tool" and MARKER in recall_result["content"]
    assert re.search(r"m\d{6} · tool result \(read_file\) · message \d+", recall_result["content"])
    assert "folded (not in your context)" in recall_result["content"]
    assert all(MARKER not in content_text(m.get("content")) for m in final.messages[:-1])

    # undoing the last compaction brings back the history as it was before it (and what came after)
    assert len(snapshots) == len(records)
    undone = await loop.undo_compaction()
    assert undone.ok and undone.voided_id == records[-1].id
    summary, entries = snapshots[-1]
    rebuilt = rebuild_history(read_session_file(loop.session.path).records)
    assert rebuilt.summary == summary
    assert [(e.id, e.message) for e in rebuilt.entries][: len(entries)] == entries
    assert (loop.conversation.history.summary, loop.conversation.history.entries) == (
        rebuilt.summary,
        rebuilt.entries,
    )


def _first_request_after_tool_call(llm: Any, path: str) -> int:
    for request in llm.requests:
        for message in request.messages:
            for call in message.get("tool_calls") or ():
                if f'"{path}"' in call["function"]["arguments"] or f" {path}" in call["function"]["arguments"]:
                    return int(request.index)
    raise AssertionError(f"{path} was never changed")


def _last_request_after_tool_call(llm: Any, user_text: str) -> int:
    for request in llm.requests:
        if any(strip_runtime_block(content_text(m.get("content"))) == user_text for m in request.messages):
            return int(request.index) + 1
    raise AssertionError(user_text)
