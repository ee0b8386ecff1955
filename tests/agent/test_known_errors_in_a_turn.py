"""A known error during a turn says what happened and what to do; only the truly unexpected is "Unexpected"
(docs/architecture.md §14)."""

from __future__ import annotations

from catbuddy.agent.events import ErrorOccurred, TurnEndReason
from catbuddy.agent.runner import TurnRunner
from catbuddy.errors import CatbuddyError
from catbuddy.session.records import read_session_file
from catbuddy.testing.script import Reply


async def test_a_full_disk_while_saving_the_session_says_where_and_what_to_do(
    scripted_llm, make_loop, full_disk_for_sessions
):
    scripted_llm.push(Reply.text("never saved"))
    loop, events = await make_loop(scripted_llm)
    full_disk_for_sessions(0)

    outcome = await loop.run_turn("hello")

    assert outcome.reason is TurnEndReason.ERROR
    (error,) = events.of(ErrorOccurred)
    assert error.message.startswith("The session could not be saved")
    assert str(loop.workspace.sessions_dir) in error.message and "No space left on device" in error.message
    assert error.hint.startswith("The disk holding") and "free some space" in error.hint
    assert "Unexpected" not in error.message


async def test_after_the_space_is_freed_the_session_goes_on(scripted_llm, make_loop, full_disk_for_sessions):
    scripted_llm.push(Reply.text("lost"), Reply.text("kept"))
    loop, events = await make_loop(scripted_llm)
    full_disk_for_sessions(0)
    await loop.run_turn("first")
    full_disk_for_sessions(1_000_000)

    outcome = await loop.run_turn("second")

    assert outcome.reason is TurnEndReason.DONE and outcome.text == "kept"
    loaded = read_session_file(loop.session.path)
    assert [m.message["content"] for m in loaded.messages if m.message["role"] == "assistant"][-1] == "kept"


async def test_a_bug_during_a_turn_is_the_only_unexpected_error(scripted_llm, make_loop, monkeypatch):
    async def broken(self, text, meta=None):  # a bug in catbuddy: nothing it knows how to explain
        raise KeyError("boom")

    monkeypatch.setattr(TurnRunner, "run", broken)
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("hello")

    assert outcome.reason is TurnEndReason.ERROR
    (error,) = events.of(ErrorOccurred)
    assert error.message == "Unexpected error: 'boom'" and "See the log" in error.hint


async def test_a_known_error_from_anywhere_in_a_turn_shows_its_message_and_hint(
    scripted_llm, make_loop, monkeypatch
):
    async def refused(self, text, meta=None):
        raise CatbuddyError("The thing could not be done.", "Do the other thing.")

    monkeypatch.setattr(TurnRunner, "run", refused)
    loop, events = await make_loop(scripted_llm)

    await loop.run_turn("hello")

    (error,) = events.of(ErrorOccurred)
    assert (error.message, error.hint) == ("The thing could not be done.", "Do the other thing.")
