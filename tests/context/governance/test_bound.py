"""The byte bound: a request governed before the tokenizer loads is the request exact counting makes
(docs/architecture.md §3, "The first request")."""

from __future__ import annotations

from typing import Any

import pytest

from catbuddy.config import ContextSettings
from catbuddy.context.assembly.builder import BuiltPrompt, Layer
from catbuddy.context.counting.tokens import TokenCounter, counter_for
from catbuddy.context.governance.bound import ByteBoundCounter, govern_by_bound
from catbuddy.context.governance.governor import Budget
from catbuddy.context.governance.report import govern_request
from catbuddy.session.history import HistoryEntry, WorkingHistory
from catbuddy.tools.registry import ToolRegistry, builtin_tools

ENCODINGS = ["o200k_base", "cl100k_base"]
TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog. " * 20,
    "code": "def f(x: int) -> int:\n    return {k: v for k, v in zip(range(x), range(x))}\n" * 10,
    "chinese": "上下文工程决定了模型看到的一切。" * 20,
    "emoji": "🐈‍⬛🚀✨ " * 30,
    "whitespace": " \n\t  \r\n" * 40,
    "digits": "3141592653589793238462643383279 " * 10,
    "lone surrogate": "before \ud800 after",
    "mixed": "naïve café — Ωmega ∑ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﷺ ‮",
}
BUDGET = Budget(context_window=128_000, max_output_tokens=8_000)
THRESHOLD = 90_000
COMPACTABLE = ToolRegistry(builtin_tools()).microcompactable()


def _prompt(text: str = "You are catbuddy, a coding assistant.") -> BuiltPrompt:
    return BuiltPrompt(text=text, layers=[Layer("identity", text)], channel="headless")


def _history(*messages: dict[str, Any]) -> WorkingHistory:
    return WorkingHistory(entries=[HistoryEntry(f"m{i:06d}", m) for i, m in enumerate(messages)])


def _read(call_id: str, content: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def _govern(history: WorkingHistory, tools: list[dict[str, Any]], **context: Any) -> Any:
    settings = ContextSettings(**context)
    return (
        govern_by_bound(
            prompt=_prompt(), tools=tools, history=history, encoding_name="o200k_base", budget=BUDGET,
            context=settings, calibration=1.0, compact_threshold=THRESHOLD, compactable=COMPACTABLE,
        ),
        govern_request(
            prompt=_prompt(), tools=tools, history=history, counter=counter_for("o200k_base"), budget=BUDGET,
            context=settings, calibration=1.0, compactable=COMPACTABLE,
        ),
    )  # fmt: skip


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("name", list(TEXTS))
def test_the_byte_bound_never_counts_a_text_below_its_tokens(encoding: str, name: str) -> None:
    assert ByteBoundCounter(encoding).count_text(TEXTS[name]) >= TokenCounter(encoding).count_text(TEXTS[name])


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_byte_bound_never_counts_a_message_below_its_tokens(encoding: str) -> None:
    messages = [
        {"role": "user", "content": TEXTS["chinese"], "name": "ada"},
        *_read("call_1", TEXTS["code"]),
        {"role": "assistant", "content": [{"type": "text", "text": TEXTS["emoji"]}]},
    ]
    bound, exact = ByteBoundCounter(encoding), TokenCounter(encoding)

    for message in messages:
        assert bound.count_message(message) >= exact.count_message(message)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_byte_bound_never_counts_the_tool_schemas_below_their_tokens(encoding: str) -> None:
    schemas = ToolRegistry(builtin_tools()).schemas()

    assert ByteBoundCounter(encoding).count_tools(schemas) >= TokenCounter(encoding).count_tools(schemas)


def test_the_byte_bound_needs_no_tokenizer_and_says_it_is_not_exact() -> None:
    bound = ByteBoundCounter("o200k_base")

    assert bound.count_text("héllo") == 6
    assert bound.loaded and not bound.exact
    assert bound.cache_key != "o200k_base"  # its counts are never filed as the exact ones


def test_a_new_counter_loads_its_tokenizer_at_the_first_count() -> None:
    counter = TokenCounter("o200k_base")
    assert not counter.loaded

    assert counter.count_text("hello world") == 2
    assert counter.loaded


def test_a_short_history_is_sent_as_exact_governance_would_send_it() -> None:
    tools = ToolRegistry(builtin_tools()).schemas()
    history = _history({"role": "user", "content": "fix the bug"}, *_read("call_1", TEXTS["code"]))

    bound, exact = _govern(history, tools)

    assert bound is not None and bound.bound and not exact.bound
    assert bound.messages == exact.messages
    assert bound.size.tokens >= exact.size.tokens


def test_old_results_that_could_be_stubbed_take_the_exact_path() -> None:
    reads = [m for i in range(3) for m in _read(f"call_{i}", "x = 1\n" * 400)]
    history = _history({"role": "user", "content": "read them"}, *reads)

    bound, exact = _govern(history, [], keep_recent_results=2, microcompact_min_tokens=0)

    assert bound is None
    assert exact.report.microcompacted  # what exact governance does, that bytes could not have decided


def test_a_history_that_needs_repair_takes_the_exact_path() -> None:
    orphan = {"role": "tool", "tool_call_id": "call_gone", "content": "a result nobody asked for"}
    history = _history({"role": "user", "content": "hi"}, orphan)

    bound, exact = _govern(history, [])

    assert bound is None and exact.report.orphans_dropped == 1


@pytest.mark.parametrize("repeats", [100, 150])
def test_a_history_whose_bound_passes_the_compaction_threshold_takes_the_exact_path(repeats: int) -> None:
    # 200 tokens but 960 bytes a repeat: far below the threshold exactly; in bytes past the threshold
    # (96k) or past the whole budget (144k), where bound governance would overflow.
    history = _history({"role": "user", "content": TEXTS["chinese"] * repeats})

    bound, exact = _govern(history, [])

    assert bound is None
    assert exact.size.tokens < THRESHOLD and not exact.report.changed
