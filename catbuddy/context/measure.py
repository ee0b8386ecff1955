"""The one measure of a request: how many tokens a chat request takes, against the budget.

Governance, the compaction trigger, the status bar (``ContextStatus``), ``/context`` and
``catbuddy context`` all call ``measure_request``, so every figure the user sees is the figure of the
request that is sent (docs/architecture.md §3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catbuddy.context.tokens import REPLY_PRIMING, TokenCounter
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
    history: Iterable[Mapping[str, Any]] = (),
    calibration: float = 1.0,
) -> RequestSize:
    """Measure the request ``[system, summary?, *history]`` with ``tools``."""
    return RequestSize(
        system=counter.count_message({"role": "system", "content": system_prompt}) if system_prompt else 0,
        tools=counter.count_tools(list(tools) if tools else None),
        summary=counter.count_message(summary_message(summary)) if summary else 0,
        history=sum(counter.count_message(message) for message in history),
        calibration=max(1.0, calibration),
    )
