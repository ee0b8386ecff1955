"""Batched microcompaction: old bulky results stay verbatim until stubbing them saves enough to pay for the
prompt-cache miss it causes; then all of them are stubbed at once, and between batches the request's
prefix does not change by a byte. The rule is a function of the history alone."""

from __future__ import annotations

import json
from typing import Any

from catbuddy.agent.toolset import build_registry
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.governor import Budget, FixedPart, govern_context
from catbuddy.context.governance.governor_steps import microcompact

COUNTER = counter_for("o200k_base")
COMPACTABLE = build_registry().microcompactable()  # the built-in tools' own declarations
BIG = Budget(context_window=1_000_000, max_output_tokens=1_000)
PLAIN = FixedPart(system_prompt="You are catbuddy.", tools=[])
MIN = 3_000


def text_of(i: int, lines: int = 60) -> str:
    return "\n".join(f"file{i} line {n}: the quick brown fox jumps over the lazy dog" for n in range(lines))


def read_turn(i: int, lines: int = 60) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"read file {i}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": text_of(i, lines)},
        {"role": "assistant", "content": f"file {i} read"},
    ]


def history_of(n: int, lines: int = 60) -> list[dict[str, Any]]:
    return [message for i in range(n) for message in read_turn(i, lines)]


def govern(history: list[dict[str, Any]], budget: Budget = BIG, **kw: Any) -> Any:
    kw.setdefault("microcompact_min_tokens", MIN)
    return govern_context(history, PLAIN, budget, COUNTER, compactable=COMPACTABLE, **kw)


def stubbed(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if m["role"] == "tool" and m["content"].startswith("[read_file")]


def wire(governed: Any) -> str:
    return json.dumps(governed.messages)


def saving_per_result() -> int:
    _, stats = microcompact(history_of(11), COUNTER, keep_recent=10, compactable=COMPACTABLE)
    return stats.tokens_saved


def test_results_past_the_newest_ten_stay_whole_until_a_batch_is_worth_it() -> None:
    per = saving_per_result()
    needed = -(-MIN // per)  # old results whose stubbing saves MIN
    before = govern(history_of(10 + needed - 1))
    assert before.report.microcompacted == 0
    assert before.report.microcompact_pending_tokens == per * (needed - 1)


def test_a_batch_stubs_every_old_result_at_once_down_to_the_newest_ten() -> None:
    per = saving_per_result()
    needed = -(-MIN // per)
    governed = govern(history_of(10 + needed))
    assert governed.report.microcompacted == needed
    assert governed.report.microcompact_tokens_saved >= MIN
    tools = [m for m in governed.history if m["role"] == "tool"]
    assert all(m["content"].startswith("[read_file") for m in tools[:needed])
    assert not any(m["content"].startswith("[read_file") for m in tools[needed:])


def test_between_batches_each_request_only_appends_to_the_last() -> None:
    per = saving_per_result()
    needed = -(-MIN // per)
    requests = [wire(govern(history_of(n))) for n in range(10 + needed, 10 + 2 * needed)]
    for earlier, later in zip(requests, requests[1:], strict=False):
        assert later.startswith(earlier[:-1])  # everything but the closing bracket is repeated


def test_the_stubbed_part_only_grows_in_steps_of_at_least_the_minimum() -> None:
    saved = [govern(history_of(n)).report.microcompact_tokens_saved for n in range(1, 60)]
    steps = [b - a for a, b in zip(saved, saved[1:], strict=False) if b != a]
    assert steps and all(step >= MIN for step in steps)
    assert saved == sorted(saved)


def test_the_newest_ten_bulky_results_are_never_stubbed() -> None:
    for n in range(1, 40):
        tools = [m for m in govern(history_of(n)).history if m["role"] == "tool"]
        assert not any(m["content"].startswith("[read_file") for m in tools[-10:]), n


def test_governance_is_a_function_of_the_history_alone() -> None:
    history = history_of(23)
    first = wire(govern(history))
    for n in (5, 40, 12):  # other histories governed in between leave no trace
        govern(history_of(n))
    again = wire(govern([dict(m) for m in history]))  # equal messages, other objects
    assert again == first


def test_budget_pressure_stubs_every_old_result_before_snipping() -> None:
    waiting = -(-MIN // saving_per_result()) - 1
    history = history_of(10 + waiting)
    relaxed = govern(history)
    assert relaxed.report.microcompacted == 0  # not yet a batch
    whole = relaxed.report.tokens_after
    tight = Budget(context_window=whole - 500 + 1_000 + 1024, max_output_tokens=1_000)
    pressed = govern(history, budget=tight)
    assert pressed.report.microcompacted == waiting
    assert pressed.report.microcompact_forced
    assert pressed.report.messages_snipped == 0
    assert pressed.report.tokens_after <= tight.limit


def test_a_request_that_fits_is_never_forced() -> None:
    governed = govern(history_of(12))
    assert not governed.report.microcompact_forced


def test_minimum_zero_is_the_seeds_sliding_window() -> None:
    for n in (11, 12, 20):
        assert govern(history_of(n), microcompact_min_tokens=0).report.microcompacted == n - 10


def test_fewer_results_than_the_window_are_never_stubbed() -> None:
    for n in range(0, 11):
        assert govern(history_of(n), microcompact_min_tokens=0).report.microcompacted == 0, n
