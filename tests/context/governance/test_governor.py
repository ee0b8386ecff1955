"""Context governance, rule by rule (docs/architecture.md §4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from catbuddy.agent.toolset import build_registry
from catbuddy.context.counting.tokens import REPLY_PRIMING, TokenCounter, counter_for
from catbuddy.context.governance.governor import (
    SUMMARY_PREFIX,
    UNAVAILABLE_RESULT,
    Budget,
    ContextOverflowError,
    FixedPart,
    FixedSizes,
    backfill_missing_results,
    drop_orphans,
    govern_context,
    microcompact,
    protocol_problems,
    snip_history,
)

COUNTER = counter_for("o200k_base")
COMPACTABLE = build_registry().microcompactable()  # the built-in tools' own declarations
BIG = Budget(context_window=1_000_000, max_output_tokens=1_000)
PLAIN = FixedPart(system_prompt="You are catbuddy.", tools=[])
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


def user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"path": "a.py"}'}}


def asst(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def result(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def govern(history: list[dict[str, Any]], fixed: FixedPart = PLAIN, budget: Budget = BIG, **kw: Any):
    return govern_context(history, fixed, budget, COUNTER, compactable=COMPACTABLE, **kw)


def tokens(messages: list[dict[str, Any]]) -> int:
    return sum(COUNTER.count_message(m) for m in messages)


def big_text(n: int, seed: str = "line") -> str:
    return "\n".join(f"{seed} {i}: the quick brown fox jumps over the lazy dog" for i in range(n))


def fixed_budget_for(history: list[dict[str, Any]], fixed: FixedPart = PLAIN, slack: int = 0) -> Budget:
    """A budget that holds exactly the fixed part plus ``history`` (plus ``slack`` tokens)."""
    fixed_tokens = govern(history, fixed).report.fixed_tokens
    return Budget(context_window=fixed_tokens + tokens(history) + slack + 1000 + 1024, max_output_tokens=1000)


# --- step 1: orphans ------------------------------------------------------------------------------


def test_an_orphan_result_at_the_start_is_dropped() -> None:
    governed = govern([result("ghost"), user(), asst(content="hello")])
    assert governed.history == [user(), asst(content="hello")]
    assert governed.report.orphans_dropped == 1


def test_a_result_before_its_call_is_dropped_and_the_call_backfilled() -> None:
    history = [user(), result("c1", "early"), asst(call("c1")), user("next")]
    governed = govern(history)
    assert governed.history == [user(), asst(call("c1")), result("c1", UNAVAILABLE_RESULT), user("next")]
    assert (governed.report.orphans_dropped, governed.report.backfilled) == (1, 1)


def test_drop_orphans_keeps_answered_results_as_the_same_objects() -> None:
    history = [user(), asst(call("c1")), result("c1"), result("nobody")]
    kept, dropped = drop_orphans(history)
    assert dropped == 1
    assert all(a is b for a, b in zip(kept, history[:3], strict=True))


# --- step 2: backfill, duplicates, moves ----------------------------------------------------------


def test_two_results_for_one_call_keep_the_first() -> None:
    history = [user(), asst(call("c1")), result("c1", "first"), result("c1", "second")]
    governed = govern(history)
    assert governed.history == [user(), asst(call("c1")), result("c1", "first")]
    assert governed.report.duplicates_dropped == 1


def test_parallel_calls_with_one_missing_get_a_placeholder_in_call_order() -> None:
    history = [user(), asst(call("a"), call("b"), call("c")), result("c", "C"), result("a", "A")]
    governed = govern(history)
    assert governed.history[2:] == [result("a", "A"), result("b", UNAVAILABLE_RESULT), result("c", "C")]
    assert governed.report.backfilled == 1
    assert protocol_problems(governed.history) == []


def test_a_result_separated_from_its_call_is_moved_right_after_it() -> None:
    history = [user(), asst(call("c1")), user("are you there?"), result("c1", "found")]
    governed = govern(history)
    assert governed.history == [user(), asst(call("c1")), result("c1", "found"), user("are you there?")]
    assert governed.report.results_moved == 1


def test_reused_call_ids_pair_each_result_with_its_own_call() -> None:
    history = [user(), asst(call("call_0")), result("call_0", "one"), user(), asst(call("call_0"))]
    governed = govern(history)
    assert governed.history[2] == result("call_0", "one")
    assert governed.history[5] == result("call_0", UNAVAILABLE_RESULT)


def test_interrupted_calls_at_the_end_are_backfilled() -> None:
    history = [user(), asst(call("a"), call("b")), result("a")]
    repaired, stats = backfill_missing_results(history)
    assert repaired == [*history, result("b", UNAVAILABLE_RESULT)]
    assert stats.backfilled == 1
    assert govern(history).history == repaired


# --- step 3: microcompact -------------------------------------------------------------------------


def _read_turns(n: int, name: str = "read_file") -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [user()]
    for i in range(n):
        history += [asst(call(f"c{i}", name)), result(f"c{i}", big_text(20, f"file{i}"))]
    return history


def test_old_results_become_a_preview_of_their_first_80_characters() -> None:
    history = _read_turns(11)
    governed = govern(history)
    text = history[2]["content"]
    assert governed.history[2]["content"] == f"[read_file result: {text[:80]}...]"
    assert governed.history[2]["tool_call_id"] == "c0"
    assert governed.report.microcompacted == 1


def test_the_ten_most_recent_results_are_kept_whole() -> None:
    assert govern(_read_turns(10)).report.microcompacted == 0
    assert govern(_read_turns(11)).report.microcompacted == 1
    assert govern(_read_turns(11), keep_recent_results=0).report.microcompacted == 11


def test_a_backfilled_placeholder_does_not_count_as_a_recent_result() -> None:
    history = [*_read_turns(10), user("go on"), asst(call("lost"))]
    governed = govern(history)
    assert governed.history[-1] == result("lost", UNAVAILABLE_RESULT)
    assert governed.report.microcompacted == 0


def test_microcompact_is_idempotent() -> None:
    once, _ = microcompact(_read_turns(15), COUNTER, 10, compactable=COMPACTABLE)
    twice, stats = microcompact(once, COUNTER, 10, compactable=COMPACTABLE)
    assert twice == once
    assert stats.compacted == 0


def test_a_result_already_shorter_than_its_preview_is_left_alone() -> None:
    history = [user(), asst(call("c0")), result("c0", "short"), *_read_turns(10)[1:]]
    compacted, stats = microcompact(history, COUNTER, 10, compactable=COMPACTABLE)
    assert compacted[2] is history[2]
    assert stats.compacted == 0


def test_skill_edit_and_mcp_results_are_never_compacted() -> None:
    for name in ("skill", "edit_file", "mcp__git__git_log"):
        assert govern(_read_turns(12, name)).report.microcompacted == 0


def test_the_tool_name_falls_back_to_the_result_message_name() -> None:
    named = {"role": "tool", "tool_call_id": "x", "name": "grep", "content": big_text(10)}
    compacted, stats = microcompact([named], COUNTER, 0, compactable=COMPACTABLE)
    assert compacted[0]["content"].startswith("[grep result: line 0")
    assert compacted[0]["name"] == "grep"


def test_tokens_saved_is_the_count_difference() -> None:
    history = _read_turns(12)
    compacted, stats = microcompact(history, COUNTER, 10, compactable=COMPACTABLE)
    assert stats.compacted == 2
    assert stats.tokens_saved == tokens(history) - tokens(compacted)


def test_chinese_results_are_compacted_by_characters_and_counted_exactly() -> None:
    chinese = "上下文窗口满了之后，旧的工具结果会被压缩成一行摘要。" * 40
    history = [user("读一下这个文件"), asst(call("c0")), result("c0", chinese), *_read_turns(10)[1:]]
    governed = govern(history, FixedPart("你是 catbuddy。", TOOLS))
    assert governed.history[2]["content"] == f"[read_file result: {chinese[:80]}...]"
    assert governed.report.tokens_after == COUNTER.count_request(governed.messages, TOOLS)


# --- step 4: snip ---------------------------------------------------------------------------------


def _turns(n: int, size: int = 30) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    for i in range(n):
        history += [user(f"question {i}"), asst(call(f"t{i}", "edit_file")), result(f"t{i}", big_text(size))]
        history.append(asst(content=f"answer {i}"))
    return history


def test_snip_drops_from_the_front_and_lands_on_a_user_message() -> None:
    history = _turns(6)
    budget = fixed_budget_for(history[8:], slack=5)  # room for the last four turns, and a bit
    governed = govern(history, budget=budget)
    assert governed.history == history[8:]
    assert governed.history[0]["role"] == "user"
    assert governed.report.messages_snipped == 8
    assert governed.report.calibrated_after <= budget.limit


def test_a_cut_never_lands_inside_a_turn() -> None:
    history = _turns(6)
    budget = fixed_budget_for(history[9:])  # one message short of a whole turn: that turn must go
    governed = govern(history, budget=budget)
    assert governed.history == history[12:]


def test_the_current_turn_is_kept_even_when_nothing_else_fits() -> None:
    history = _turns(5)
    current = history[-4:]
    governed = govern(history, budget=fixed_budget_for(current))
    assert governed.history == current
    assert governed.history[0] is history[-4]


def test_leading_assistant_and_tool_messages_are_dropped() -> None:
    history = [asst(call("c1")), result("c1"), asst(content="done"), user("now this"), asst(content="ok")]
    governed = govern(history)
    assert governed.history == history[3:]
    assert governed.report.messages_snipped == 3


def test_a_history_of_only_tool_traffic_sends_no_history() -> None:
    history = [asst(call("c1")), result("c1"), asst(call("c2")), asst(content="hm")]
    governed = govern(history)
    assert governed.history == []
    assert governed.messages == [{"role": "system", "content": PLAIN.system_prompt}]


def test_the_pinned_summary_is_counted_first_and_never_snipped() -> None:
    fixed = FixedPart("You are catbuddy.", TOOLS, summary="The user wants a CLI. 用户想要一个命令行工具。")
    history = _turns(4)
    governed = govern(history, fixed, budget=fixed_budget_for(history[-4:], fixed))
    summary = {"role": "user", "content": SUMMARY_PREFIX + fixed.summary}
    assert governed.messages[:2] == [{"role": "system", "content": fixed.system_prompt}, summary]
    assert governed.history == history[-4:]
    expected_fixed = (
        COUNTER.count_message(governed.messages[0])
        + COUNTER.count_message(summary)
        + COUNTER.count_tools(TOOLS)
        + REPLY_PRIMING
    )
    assert governed.report.fixed_tokens == expected_fixed


def test_an_oversized_current_turn_has_its_tool_result_cut_in_the_middle() -> None:
    text = big_text(3000)
    history = [user("old"), asst(content="old answer"), user("read it"), asst(call("c1")), result("c1", text)]
    budget = Budget(context_window=8000, max_output_tokens=1000)
    governed = govern(history, budget=budget)
    cut = governed.history[2]["content"]
    assert governed.history[0] == user("read it")
    assert "characters cut to fit the context window ...]" in cut
    head, tail = cut.split("\n[... ")[0], cut.split("...]\n")[-1]
    assert text.startswith(head) and text.endswith(tail) and len(head) > 1000 and len(tail) > 1000
    assert governed.report.results_truncated == 1
    assert governed.report.tokens_after <= budget.limit


def test_two_oversized_results_are_both_cut_to_a_similar_size() -> None:
    history = [
        user("read both"),
        asst(call("a"), call("b")),
        result("a", big_text(3000, "a")),
        result("b", big_text(2000, "b")),
    ]
    governed = govern(history, budget=Budget(context_window=10_000, max_output_tokens=1000))
    a, b = (COUNTER.count_message(m) for m in governed.history[2:])
    assert governed.report.results_truncated == 2
    assert abs(a - b) < 0.2 * max(a, b)


def test_a_fixed_part_too_big_raises_an_error_naming_the_layer_sizes() -> None:
    layers = {"identity": 300, "bootstrap": 4000, "memory": 900, "skills": 2500, "runtime": 120}
    fixed = FixedPart(big_text(400), TOOLS, summary="so far", layer_tokens=layers)
    with pytest.raises(ContextOverflowError) as caught:
        govern([user()], fixed, Budget(context_window=4000, max_output_tokens=1000))
    text = str(caught.value)
    for part in (
        "identity 300",
        "bootstrap 4,000",
        "memory 900",
        "skills 2,500",
        "runtime 120",
        "tool schemas",
    ):
        assert part in text
    assert "the budget is 1,976 tokens" in text and "context_window" in text and "MCP servers" in text
    assert caught.value.sizes["budget"] == 1976
    assert caught.value.sizes["skills"] == 2500
    assert caught.value.sizes["fixed"] > 1976


def test_a_current_turn_that_cannot_be_cut_to_fit_raises() -> None:
    history = [user(big_text(2000))]
    with pytest.raises(ContextOverflowError) as caught:
        govern(history, budget=Budget(context_window=5000, max_output_tokens=1000))
    assert "current turn needs" in str(caught.value) and "shorter message" in str(caught.value)
    assert caught.value.sizes["current_turn"] == tokens(history)


def test_an_overflow_under_calibration_says_so() -> None:
    with pytest.raises(ContextOverflowError, match="calibration ratio 1.50"):
        govern([user()], FixedPart(big_text(60), []), Budget(3000, 1000), calibration=1.5)


def test_snip_history_alone_checks_the_fixed_part_first() -> None:
    with pytest.raises(ContextOverflowError):
        snip_history([user()], COUNTER, fixed=FixedSizes(system_prompt=500), limit=400)


# --- calibration, report, purity -----------------------------------------------------------------


def test_a_calibration_ratio_shrinks_what_fits() -> None:
    history = _turns(6)
    budget = fixed_budget_for(history, slack=10)
    assert govern(history, budget=budget).report.messages_snipped == 0
    calibrated = govern(history, budget=budget, calibration=1.5)
    assert calibrated.report.messages_snipped > 0
    assert calibrated.report.calibrated_after <= budget.limit
    assert calibrated.report.calibrated_after >= calibrated.report.tokens_after * 1.5


def test_a_calibration_below_one_is_not_trusted() -> None:
    history = _turns(6)
    budget = fixed_budget_for(history[4:])
    assert govern(history, budget=budget, calibration=0.5).history == history[4:]
    with pytest.raises(ValueError, match="calibration"):
        govern(history, calibration=float("nan"))


def test_report_numbers_match_the_request() -> None:
    history = [result("ghost"), *_read_turns(12), user("and?"), asst(call("z"))]
    governed = govern(history, FixedPart("sys", TOOLS))
    report = governed.report
    assert (report.orphans_dropped, report.backfilled, report.microcompacted) == (1, 1, 2)
    assert report.tokens_before == report.fixed_tokens + tokens(history)
    assert report.tokens_after == COUNTER.count_request(governed.messages, TOOLS)
    assert report.messages_before == len(history) and report.messages_after == len(governed.history)
    assert report.changed
    assert report.summary() == (
        f"1 orphan tool result dropped, 1 missing tool result backfilled, "
        f"2 old tool results compacted ({report.microcompact_tokens_saved:,} tokens saved)"
    )
    assert report.to_dict()["microcompacted"] == 2


def test_a_clean_history_reports_nothing() -> None:
    report = govern([user(), asst(call("c1")), result("c1"), asst(content="done")]).report
    assert not report.changed
    assert report.summary() == ""


def test_the_input_history_is_never_mutated() -> None:
    history = [
        result("ghost"),
        *_read_turns(12),
        user("again"),
        asst(call("a"), call("b")),
        result("b", big_text(3000)),
        result("b", "dup"),
    ]
    before = copy.deepcopy(history)
    ids = [id(m) for m in history]
    govern(history, budget=Budget(context_window=9000, max_output_tokens=1000))
    assert history == before
    assert [id(m) for m in history] == ids


def test_unchanged_messages_are_passed_through_as_the_same_objects() -> None:
    history = _read_turns(11)
    governed = govern(history)
    assert all(a is b for a, b in zip(governed.history[3:], history[3:], strict=True))


def test_budget_limit_is_window_minus_output_minus_margin_never_negative() -> None:
    assert Budget(128_000, 16_384).limit == 128_000 - 16_384 - 1024
    assert Budget(1000, 2000).limit == 0


def test_a_history_entry_that_is_not_a_message_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"history\[1\] is a str"):
        govern([user(), "oops"])  # type: ignore[list-item]


def test_tool_schema_counts_are_remembered_but_exact() -> None:
    fresh = TokenCounter(COUNTER.encoding_name)
    assert (
        fresh.count_tools(TOOLS)
        == fresh._count_tools_uncached(TOOLS)
        == COUNTER.count_tools(copy.deepcopy(TOOLS))
    )
    assert fresh.count_tools([]) == 0


def test_protocol_problems_names_what_an_api_would_reject() -> None:
    assert protocol_problems([user(), asst(call("a")), user()]) == [
        "message 2: call 'a' has no result right after it"
    ]
    assert protocol_problems([result("x")]) == ["message 0: tool result 'x' answers no call"]


def test_a_history_far_bigger_than_the_budget_is_counted_only_as_far_as_needed() -> None:
    history = []
    for i in range(400):
        history += [user(f"question {i} " + "word " * 300), asst(content="answer " + "word " * 300)]
    budget = Budget(context_window=8000, max_output_tokens=1000)
    counted: list[object] = []
    counter = COUNTER

    class Counting:
        encoding_name = counter.encoding_name
        exact = True

        def count_message(self, message):  # noqa: ANN001
            counted.append(message)
            return counter.count_message(message)

        def count_text(self, text: str) -> int:
            return counter.count_text(text)

        def count_tools(self, tools):  # noqa: ANN001
            return counter.count_tools(tools)

    governed = govern_context(history, FixedPart("system", []), budget, Counting(), compactable=COMPACTABLE)  # type: ignore[arg-type]

    assert governed.report.tokens_before > budget.limit * 10
    assert not governed.report.tokens_before_exact
    assert len(counted) < len(history) / 4  # only the newest part, a few budgets' worth
