"""Prompt-cache figures of a sequence of chat requests: prefix reuse, billed input, largest request.

Shared by the cache benchmark and the tests. Reuse between two consecutive requests is the share of the
earlier request's tokens that the later one repeats as its prefix, byte for byte (tool schemas first, then
the messages, as a provider lays a request out): 1.0 when the later request only appends. Billed input prices the repeated prefix at
``CACHED_PRICE`` of a fresh token, as OpenAI- and Anthropic-style caches bill it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catbuddy.testing.prefix_cache import request_parts

CACHED_PRICE = 0.10  # a cached prompt token costs 10% of a fresh one


@dataclass(frozen=True)
class CacheFigures:
    requests: int
    mean_reuse: float
    min_reuse: float
    total_input: int
    billed_input: float
    largest: int

    def row(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "mean reuse": round(self.mean_reuse, 3),
            "min reuse": round(self.min_reuse, 3),
            "total input": self.total_input,
            "billed input": round(self.billed_input),
            "largest": self.largest,
        }


def shared_prefix_tokens(
    earlier: Mapping[str, Any], later: Mapping[str, Any], count_text: Callable[[str], int]
) -> tuple[int, int]:
    """(tokens of the prefix ``later`` repeats from ``earlier``, all tokens of ``earlier``), our count."""
    a, b = request_parts(earlier), request_parts(later)
    sizes = [count_text(part) for part in a]
    if earlier.get("model") != later.get("model"):
        return 0, sum(sizes)
    shared = 0
    for index, part in enumerate(a):
        if index < len(b) and b[index] == part:
            shared += sizes[index]
            continue
        other = b[index] if index < len(b) else ""
        common = next((i for i, (x, y) in enumerate(zip(part, other, strict=False)) if x != y), None)
        common = min(len(part), len(other)) if common is None else common
        shared += count_text(part[:common]) if common else 0
        break
    return shared, sum(sizes)


def cache_figures(
    bodies: Sequence[Mapping[str, Any]],
    prompt_tokens: Sequence[int],
    count_text: Callable[[str], int],
) -> CacheFigures:
    """Figures for requests in the order sent; ``prompt_tokens`` as the server counted each one."""
    if not bodies:
        return CacheFigures(0, 0.0, 0.0, 0, 0.0, 0)
    reuses: list[float] = []
    billed = float(prompt_tokens[0])
    for index in range(1, len(bodies)):
        shared, total = shared_prefix_tokens(bodies[index - 1], bodies[index], count_text)
        share = shared / total if total else 0.0
        reuses.append(share)
        cached = min(prompt_tokens[index], prompt_tokens[index - 1] * share)
        billed += prompt_tokens[index] - cached + cached * CACHED_PRICE
    return CacheFigures(
        requests=len(bodies),
        mean_reuse=sum(reuses) / len(reuses) if reuses else 1.0,
        min_reuse=min(reuses) if reuses else 1.0,
        total_input=sum(prompt_tokens),
        billed_input=billed,
        largest=max(prompt_tokens),
    )
