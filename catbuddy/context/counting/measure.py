"""The one measure of a request: how many tokens a chat request takes, against the budget.

Governance, the compaction trigger, the status bar (``ContextStatus``), ``/context`` and
``catbuddy context`` all call ``measure_request``, so every figure the user sees is the figure of the
request that is sent (docs/architecture.md §3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catbuddy.context.counting.tokens import (
    FALLBACK_CHARS_PER_TOKEN,
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TokenCounter,
)
from catbuddy.messages import content_text
from catbuddy.session.history import summary_message


def calibrated(raw: int, calibration: float) -> int:
    """``raw`` tokens as the provider counts them: times the ratio, rounded up (never an under-count).
    The rounding guard keeps 1000 × 1.1 at 1100, not 1101."""
    return math.ceil(round(raw * max(1.0, calibration), 6))


@dataclass(frozen=True)
class RequestSize:
    """A request's size in our tokenizer's tokens, by part; ``tokens`` is what the budget is held to."""

    system: int = 0
    tools: int = 0
    summary: int = 0
    history: int = 0
    priming: int = REPLY_PRIMING
    calibration: float = 1.0
    exact: bool = True  # False: the history's oldest part was estimated (see ``history_cap``)

    @property
    def fixed(self) -> int:
        """What every request carries besides the history: counted first, never snipped."""
        return self.system + self.tools + self.summary + self.priming

    @property
    def raw(self) -> int:
        return self.fixed + self.history

    @property
    def tokens(self) -> int:
        return calibrated(self.raw, self.calibration)


def measure_request(
    counter: TokenCounter,
    *,
    system_prompt: str,
    tools: Sequence[Mapping[str, Any]] | None,
    summary: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
    calibration: float = 1.0,
    history_cap: int | None = None,
) -> RequestSize:
    """Measure the request ``[system, summary?, *history]`` with ``tools``. With ``history_cap``, the
    history is counted exactly from its newest message back until that many tokens and estimated
    beyond: enough to tell whether a threshold is crossed, without tokenising a huge session whole."""
    if history_cap is None:
        history_tokens, exact = sum(counter.count_message(message) for message in history), True
    else:
        history_tokens, exact = newest_first_tokens(history, counter.count_message, cap=history_cap)
    return RequestSize(
        system=counter.count_message({"role": "system", "content": system_prompt}) if system_prompt else 0,
        tools=counter.count_tools(list(tools) if tools else None),
        summary=counter.count_message(summary_message(summary)) if summary else 0,
        history=history_tokens,
        calibration=max(1.0, calibration),
        exact=exact,
    )


def newest_first_tokens(
    history: Sequence[Mapping[str, Any]], count: Callable[[Mapping[str, Any]], int], *, cap: int
) -> tuple[int, bool]:
    """The history's tokens: exact from the newest message back until ``cap``, then estimated at
    FALLBACK_CHARS_PER_TOKEN for the rest (and False)."""
    total = 0
    for index in range(len(history) - 1, -1, -1):
        total += count(history[index])
        if total > cap and index:
            rest = sum(_chars(message) for message in history[:index])
            return total + math.ceil(rest / FALLBACK_CHARS_PER_TOKEN), False
    return total, True


def _chars(message: Mapping[str, Any]) -> int:
    chars = len(content_text(message.get("content")))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        chars += len(arguments) if isinstance(arguments, str) else 0
    return chars + TOKENS_PER_MESSAGE
