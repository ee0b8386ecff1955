"""Events are plain data: every type serialises to JSON and back to an equal event."""

from __future__ import annotations

import json

import pytest

from catbuddy.agent import events as ev

SAMPLES: list[ev.Event] = [
    ev.SessionOpened(
        "20261202-101010-abcdef", True, "gpt-4o", "/home/u/.catbuddy/projects/p/sessions/x.jsonl"
    ),
    ev.TurnStarted(3, "fix the tests"),
    ev.StateChanged(ev.LoopState.IDLE, ev.LoopState.RUN),
    ev.TextDelta("Hel"),
    ev.AssistantMessage(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{}"}}],
        }
    ),
    ev.ToolCallStarted("c1", "exec", '{"command": "pytest"}', "pytest"),
    ev.ToolCallStarted("c2", "exec", '{"command": "pytest"}', "pytest", "exec"),
    ev.ToolCallFinished("c1", "exec", "2 passed", False, 0.25, None),
    ev.ToolCallFinished(
        "c2",
        "edit_file",
        "Edited a.py",
        False,
        0.01,
        "--- a/a.py\n",
        {"status": "ok", "paths": [{"path": "a.py", "change": "modified", "added": 1, "removed": 1}]},
    ),
    ev.ApprovalRequested(
        "c1", "exec", {"command": "pytest"}, "pytest", "pytest", "pytest", "runs `pytest`", answerable=False
    ),
    ev.ApprovalResolved("c1", "exec", "deny_with_note", "not now"),
    ev.ApprovalResolved("c2", "exec", "denied_by_rule", reason="refused: deletes your home directory"),
    ev.UsageReported(1200, 40, 1180, 1.02, cached_tokens=1024),
    ev.UsageReported(3329, 12, 3300, 1.0, cached_tokens=3211, cache_write_tokens=100, reasoning_tokens=8),
    ev.ReasoningDelta("The user asks for the weather; call the tool."),
    ev.ContextStatus(used=8391, budget=110_592, compact_at=88_473, model="gpt-4o"),
    ev.GovernanceReported({"microcompacted": 2, "tokens_before": 9000}, "2 old tool results compacted"),
    ev.Notice("Saved.", "success"),
    ev.Retrying(1, 0.5, "rate limited (429)"),
    ev.CompactionFinished(True, 30, 9000, 2100, 640, "Compacted 30 messages", "## Goal\n…", "c000002"),
    ev.CompactionUndone(True, "Undid compaction c000002", "c000002", "c000001", 54),
    ev.DreamProposed("dream-1", "--- a/project/MEMORY.md\n+++ b/project/MEMORY.md\n", "+1 −0 ~0", 3),
    ev.DreamFinished("applied", "Dream read 3 entries", 1, 0, 0, 3, 7, manual=True),
    ev.ErrorOccurred("Cannot connect", "Check the base URL"),
    ev.ErrorOccurred("Still too large", "Raise context_window", "context_length_exceeded"),
    ev.ModelChanged("gpt-4.1"),
    ev.ModelChanged("o4-mini", "high"),
    ev.ApprovalModeChanged("auto-edit"),
    ev.TurnStopped(4),
    ev.IterationCapReached(50),
    ev.ContextTooLong("maximum context length is 8192 tokens"),
    ev.CompactionAttemptFailed("the summary was longer than what it replaces", 2),
    ev.TurnEnded(ev.TurnEndReason.STOPPED, "partial", 2),
]


def test_there_is_a_sample_of_every_event_type() -> None:
    assert {type(event) for event in SAMPLES} == set(ev.EVENT_TYPES.values())


@pytest.mark.parametrize("event", SAMPLES, ids=lambda event: event.kind)
def test_every_event_round_trips_through_json(event: ev.Event) -> None:
    line = json.dumps(event.to_json())
    again = ev.event_from_json(json.loads(line))
    assert again == event
    assert json.loads(line)["kind"] == event.kind


def test_enums_are_written_as_their_values() -> None:
    data = ev.StateChanged(ev.LoopState.RUN, ev.LoopState.COMPACT).to_json()
    assert (data["old"], data["new"]) == ("running", "compacting")


def test_an_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown event kind 'telepathy'"):
        ev.event_from_json({"kind": "telepathy"})


def test_missing_fields_are_a_clear_error() -> None:
    with pytest.raises(ValueError, match="a notice event needs other fields"):
        ev.event_from_json({"kind": "notice"})
