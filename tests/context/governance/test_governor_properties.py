"""Context governance over random histories: what must hold whatever the history looks like."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catbuddy.agent.toolset import build_registry
from catbuddy.context.counting.tokens import REPLY_PRIMING, counter_for
from catbuddy.context.governance.governor import (
    SUMMARY_PREFIX,
    Budget,
    ContextOverflowError,
    FixedPart,
    backfill_missing_results,
    drop_orphans,
    govern_context,
    microcompact,
    repair,
)
from catbuddy.context.governance.governor_snip import raw_allowance

COUNTER = counter_for("o200k_base")
COMPACTABLE = build_registry().microcompactable()  # the built-in tools' own declarations
IDS = ["c0", "c1", "c2", "c3", "c4"]  # few ids: reuse, duplicates, results before calls all happen
TOOL_NAMES = ["read_file", "exec", "grep", "edit_file", "skill", "mcp__git__git_log"]
PIECES = ["hello world ", "你好，世界。", "def f(x):\n    return x\n", "résumé ✓ 🐱 ", "0123456789"]
TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {}}}
]
PROPERTY_SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

texts = st.builds(lambda piece, n: piece * n, st.sampled_from(PIECES), st.integers(0, 150))
# Tool output is what grows big: up to ~20,000 characters, so microcompact and cutting both happen.
outputs = st.builds(
    lambda piece, n: piece * n, st.sampled_from(PIECES), st.integers(0, 12) | st.integers(0, 1_600)
)
users = st.builds(lambda t: {"role": "user", "content": t}, texts)
replies = st.builds(lambda t: {"role": "assistant", "content": t}, texts)
tool_results = st.builds(
    lambda i, t: {"role": "tool", "tool_call_id": i, "content": t}, st.sampled_from([*IDS, "ghost"]), outputs
)


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
    calls = [
        {
            "id": i,
            "type": "function",
            "function": {"name": draw(st.sampled_from(TOOL_NAMES)), "arguments": "{}"},
        }
        for i in ids
    ]
    return {"role": "assistant", "content": draw(st.none() | texts), "tool_calls": calls}


@st.composite
def working_turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A well-formed current turn: the user asks, the agent calls tools and gets (large) results."""
    turn = [draw(users)]
    for _ in range(draw(st.integers(1, 3))):
        calls = draw(tool_calls())
        turn.append(calls)
        turn += [
            {"role": "tool", "tool_call_id": c["id"], "content": draw(outputs)} for c in calls["tool_calls"]
        ]
    return turn


messages = st.one_of(users, replies, tool_calls(), tool_calls(), tool_results, tool_results)
histories = st.builds(
    lambda front, tail: front + tail, st.lists(messages, max_size=24), st.just([]) | working_turns()
)


@st.composite
def setups(draw: st.DrawFn) -> tuple[list[dict[str, Any]], FixedPart, Budget, int, float]:
    history = draw(histories)
    fixed = FixedPart(
        system_prompt=draw(texts),
        tools=draw(st.sampled_from([[], TOOLS])),
        summary=draw(st.none() | texts),
    )
    budget = Budget(context_window=draw(st.integers(1_500, 16_000)), max_output_tokens=200)
    return history, fixed, budget, draw(st.integers(0, 4)), draw(st.floats(1.0, 2.0))


def govern(
    setup: tuple[list[dict[str, Any]], FixedPart, Budget, int, float],
    history: list[dict[str, Any]] | None = None,
):
    original, fixed, budget, keep, calibration = setup
    return govern_context(
        original if history is None else history,
        fixed,
        budget,
        COUNTER,
        compactable=COMPACTABLE,
        keep_recent_results=keep,
        calibration=calibration,
    )


def tokens(messages: list[dict[str, Any]]) -> int:
    return sum(COUNTER.count_message(m) for m in messages)


def last_user(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((m for m in reversed(history) if m["role"] == "user"), None)


def assert_protocol_valid(history: list[dict[str, Any]]) -> None:
    """Every call answered right after it, one tool message per call in call order; nothing else."""
    i = 0
    while i < len(history):
        message = history[i]
        assert message["role"] != "tool", f"orphan tool message at {i}"
        i += 1
        for call in message.get("tool_calls") or []:
            assert i < len(history) and history[i]["role"] == "tool", f"call {call['id']} unanswered"
            assert history[i]["tool_call_id"] == call["id"], "results out of call order"
            i += 1


def repaired_current_turn_fits(setup: Any) -> bool:
    """Whether the fixed part and the current turn (after steps 1–3) fit without cutting anything."""
    history, fixed, budget, keep, calibration = setup
    repaired, _ = backfill_missing_results(drop_orphans(history)[0])
    compacted, _ = microcompact(repaired, COUNTER, keep, compactable=COMPACTABLE)
    starts = [i for i, m in enumerate(compacted) if m["role"] == "user"]
    turn = compacted[starts[-1] :] if starts else []
    fixed_tokens = COUNTER.count_tools(fixed.tools) + REPLY_PRIMING
    if fixed.system_prompt:
        fixed_tokens += COUNTER.count_message({"role": "system", "content": fixed.system_prompt})
    if fixed.summary:
        fixed_tokens += COUNTER.count_message({"role": "user", "content": SUMMARY_PREFIX + fixed.summary})
    return fixed_tokens + tokens(turn) <= raw_allowance(budget.limit, max(calibration, 1.0))


@PROPERTY_SETTINGS
@given(setups())
def test_output_is_protocol_valid_and_starts_on_a_user_message(setup: Any) -> None:
    try:
        governed = govern(setup)
    except ContextOverflowError:
        return
    assert_protocol_valid(governed.history)
    assert not governed.history or governed.history[0]["role"] == "user"


@PROPERTY_SETTINGS
@given(setups())
def test_output_fits_whenever_the_fixed_part_and_current_turn_fit(setup: Any) -> None:
    fits = repaired_current_turn_fits(setup)
    try:
        governed = govern(setup)
    except ContextOverflowError:
        assert not fits, "raised although the fixed part and the current turn fit"
        return
    report = governed.report
    assert report.calibrated_after <= report.budget
    # Reply priming is always reserved, even for the (useless) request with no messages at all.
    priming_unsent = 0 if governed.messages else REPLY_PRIMING
    assert report.tokens_after == COUNTER.count_request(governed.messages, setup[1].tools) + priming_unsent


@PROPERTY_SETTINGS
@given(setups())
def test_the_current_user_message_is_always_kept(setup: Any) -> None:
    current = last_user(setup[0])
    try:
        governed = govern(setup)
    except ContextOverflowError:
        return
    if current is None:
        assert governed.history == []
    else:
        assert any(m is current for m in governed.history)


@PROPERTY_SETTINGS
@given(setups())
def test_the_history_never_grows_beyond_its_repaired_form(setup: Any) -> None:
    repaired, _ = backfill_missing_results(drop_orphans(setup[0])[0])
    try:
        governed = govern(setup)
    except ContextOverflowError:
        return
    assert tokens(governed.history) <= tokens(repaired)


@PROPERTY_SETTINGS
@given(setups())
def test_governing_twice_equals_governing_once(setup: Any) -> None:
    try:
        once = govern(setup)
    except ContextOverflowError:
        return
    twice = govern(setup, once.history)
    assert twice.history == once.history
    assert not twice.report.changed


@PROPERTY_SETTINGS
@given(setups())
def test_the_input_is_never_mutated(setup: Any) -> None:
    before = copy.deepcopy(setup[0])
    try:
        govern(setup)
    except ContextOverflowError:
        pass
    assert setup[0] == before


@PROPERTY_SETTINGS
@given(histories)
def test_the_fast_repair_path_equals_the_two_steps(history: list[dict[str, Any]]) -> None:
    kept, orphans = drop_orphans(history)
    expected, stats = backfill_missing_results(kept)
    assert repair(history) == (expected, orphans, stats)
