"""Under budget pressure the model's old reasoning is shed before any message or result is cut."""

from __future__ import annotations

from typing import Any

from catbuddy.agent.toolset import build_registry
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.governor import Budget, FixedPart, govern_context

COUNTER = counter_for("o200k_base")
PLAIN = FixedPart(system_prompt="You are catbuddy.", tools=[])
THOUGHT = "Let me think about which file to read next and why. " * 150  # ~1,800 tokens


def call(n: int) -> dict[str, Any]:
    return {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def tool_loop(steps: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "read the files"}]
    for n in range(steps):
        history.append(
            {"role": "assistant", "content": None, "reasoning_content": THOUGHT, "tool_calls": [call(n)]}
        )
        history.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"file {n}: small"})
    return history


def governed(history: list[dict[str, Any]], window: int) -> Any:
    budget = Budget(context_window=window, max_output_tokens=1000, safety_margin=0)
    return govern_context(history, PLAIN, budget, COUNTER, compactable=build_registry().microcompactable())


def test_reasoning_goes_before_any_message_when_the_turn_does_not_fit() -> None:
    history = tool_loop(4)  # ~7,400 tokens of reasoning, little else
    result = governed(history, window=4000)
    assert result.report.messages_snipped == 0 and result.report.results_truncated == 0
    replies = [m for m in result.history if m["role"] == "assistant"]
    assert [("reasoning_content" in m) for m in replies] == [
        False,
        False,
        False,
        True,
    ]  # the newest keeps its own
    assert "reasoning_content" in history[1], "the stored history is not changed"


def test_nothing_is_shed_when_the_request_fits() -> None:
    result = governed(tool_loop(4), window=100_000)
    assert all("reasoning_content" in m for m in result.history if m["role"] == "assistant")
