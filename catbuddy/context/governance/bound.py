"""Governing a request before the tokenizer has loaded (docs/architecture.md §3, "The first request").

Every token of a byte-level BPE stands for at least one byte of the text, so a text's UTF-8 length is
never less than its token count. Counted in bytes, with the Cookbook's constants unchanged, a message,
the tool schemas and so a whole request are never smaller than counted exactly.

Governance acts on counts only when a figure is above a threshold (compaction, snipping, truncation)
or when old results wait to be stubbed. So when the upper bound already fits below the compaction
threshold, no result is old enough to stub and nothing needs repair, exact counting would make the very
same request: it can be sent at once, and the counter gets ready (context/counting/tokens.py) while the model
answers. Anything else takes the exact path.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from functools import cache
from typing import Any

from catbuddy.config import ContextSettings
from catbuddy.context.assembly.builder import BuiltPrompt
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.context.governance.governor import Budget, GovernedContext
from catbuddy.context.governance.governor_snip import ContextOverflowError
from catbuddy.context.governance.governor_steps import old_result_count
from catbuddy.context.governance.report import govern_request
from catbuddy.session.history import WorkingHistory

BOUND_SUFFIX = ":utf8-bound"


class ByteBoundCounter(TokenCounter):
    """A counter that needs no tokenizer: UTF-8 bytes, an upper bound on any byte-level BPE's tokens."""

    def __init__(self, encoding_name: str) -> None:
        super().__init__(encoding_name)  # the encoding's own per-function constants
        self.cache_key = encoding_name + BOUND_SUFFIX  # never mistaken for exact counts in a cache

    @property
    def loaded(self) -> bool:
        return True

    @property
    def exact(self) -> bool:
        return False

    def count_text(self, text: str) -> int:
        # Lone surrogates: tiktoken encodes each as U+FFFD, three bytes, as "surrogatepass" counts them.
        return len(text.encode("utf-8", "surrogatepass")) if text else 0


@cache
def bound_counter_for(encoding_name: str) -> ByteBoundCounter:
    return ByteBoundCounter(encoding_name)  # one per encoding: its caches serve every first request


def govern_by_bound(
    *,
    prompt: BuiltPrompt,
    tools: list[dict[str, Any]],
    history: WorkingHistory,
    encoding_name: str,
    budget: Budget,
    context: ContextSettings,
    calibration: float,
    compact_threshold: int,
    compactable: Collection[str],
) -> GovernedContext | None:
    """The request exact governance would make, when the byte bound proves it; else None.

    The result's messages are the request; its sizes are upper bounds, not counts to show or learn from.
    """
    if old_result_count(history.messages, compactable, context.keep_recent_results):
        return None  # stubbing decisions compare savings, which bytes do not bound
    try:
        governed = govern_request(
            prompt=prompt,
            tools=tools,
            history=history,
            counter=bound_counter_for(encoding_name),
            budget=budget,
            context=context,
            calibration=calibration,
            compactable=compactable,
        )
    except ContextOverflowError:
        return None  # too big in bytes says nothing about tokens: exact counting decides
    if governed.report.changed or governed.size.tokens > compact_threshold:
        return None
    return replace(governed, bound=True)
