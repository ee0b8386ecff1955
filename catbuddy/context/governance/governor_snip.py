"""Step 4 of context governance (docs/architecture.md §4): snip the history so the request fits the budget.

Input is a protocol-valid history (steps 1–2 done), so cutting in front of any user message never
separates a tool call from its result. The current turn — the last user message and everything after
it — is never dropped; if it alone does not fit, its largest tool results are cut in the middle. A
request known to be too large is never sent: ContextOverflowError says what takes the room.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catbuddy.context.counting.tokens import REPLY_PRIMING, TokenCounter
from catbuddy.messages import content_text
from catbuddy.text import MARKER_ROOM, truncate_middle

Message = Mapping[str, Any]

TRUNCATE_MIN_KEEP_CHARS = 400  # a cut result keeps at least this much, head and tail together
TRUNCATE_MIN_SHRINK = 0.95  # each round keeps at most 95% of the previous length: always progresses
TRUNCATION_WHY = " to fit the context window"
MARKER_TOKENS = 16  # what one marker costs, a little generously


class ContextOverflowError(Exception):
    """The request cannot fit the window. ``sizes`` holds the token sizes the message names."""

    def __init__(self, message: str, sizes: Mapping[str, int], calibration: float = 1.0) -> None:
        super().__init__(message)
        self.sizes = dict(sizes)
        self.calibration = calibration


@dataclass(frozen=True)
class FixedSizes:
    """Token sizes of what every request carries before any history: counted first, never snipped."""

    system_prompt: int = 0
    tools: int = 0
    summary: int = 0
    layers: Mapping[str, int] = field(default_factory=dict)  # system prompt layers, for messages
    priming: int = REPLY_PRIMING

    @property
    def total(self) -> int:
        return self.system_prompt + self.tools + self.summary + self.priming


@dataclass(frozen=True)
class SnipResult:
    messages: list[Message]
    snipped: int  # messages dropped from the front
    truncated: int  # tool results of the current turn cut in the middle
    tokens: int  # raw tokens of the kept messages


def raw_allowance(limit: int, calibration: float) -> int:
    """The most raw (our-count) tokens that, times the calibration ratio, stay within ``limit``."""
    return math.floor(limit / calibration + 1e-9)


def current_turn_start(history: Sequence[Message]) -> int | None:
    """Index of the last user message: the one that started the current turn."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].get("role") == "user":
            return index
    return None


def snip_history(
    history: Sequence[Message],
    counter: TokenCounter,
    *,
    fixed: FixedSizes,
    limit: int,
    calibration: float = 1.0,
    count: Callable[[Message], int] | None = None,
) -> SnipResult:
    """Drop messages from the front until fixed part + history fit ``limit``; see the module doc.

    ``count`` may supply already-known message counts; messages are counted from the end back to
    the cut only, so a long history costs no more than what is kept.
    """
    count = count or counter.count_message
    allowed = raw_allowance(limit, calibration) - fixed.total
    if allowed < 0:
        raise ContextOverflowError(*_fixed_overflow(fixed, limit, calibration))
    start = current_turn_start(history)
    if start is None:  # no user message at all: nothing can be sent as history
        return SnipResult([], len(history), 0, 0)
    turn = list(history[start:])
    turn_counts = [count(m) for m in turn]
    turn_tokens = sum(turn_counts)
    if turn_tokens > allowed:
        truncated = _fit_turn(turn, turn_counts, allowed - turn_tokens, counter)
        if sum(turn_counts) > allowed:
            raise ContextOverflowError(
                *_turn_overflow(fixed, turn_tokens, turn_counts[0], limit, calibration)
            )
        return SnipResult(turn, start, truncated, sum(turn_counts))
    # Walk back from the current turn; the earliest user message whose suffix still fits is the cut.
    keep_from, running, kept_tokens = start, turn_tokens, turn_tokens
    for index in range(start - 1, -1, -1):
        message = history[index]
        running += count(message)
        if running > allowed:
            break
        if message.get("role") == "user":
            keep_from, kept_tokens = index, running
    return SnipResult(list(history[keep_from:]), keep_from, 0, kept_tokens)


def _fit_turn(turn: list[Message], counts: list[int], deficit: int, counter: TokenCounter) -> int:
    """Cut the turn's largest tool results (in place in ``turn``/``counts``) until ``deficit`` ≥ 0.

    The largest results are brought down to a common level ("water-filling"), so two big outputs
    both keep something useful instead of one vanishing. Token counts do not scale exactly with
    characters, so this repeats with a lower level until it fits or nothing more can be cut.
    """
    originals: dict[int, str] = {}
    keep: dict[int, int] = {}
    while deficit < 0:
        candidates = [
            k
            for k, message in enumerate(turn)
            if message.get("role") == "tool"
            and keep.get(k, len(originals.get(k) or content_text(message.get("content"))))
            > TRUNCATE_MIN_KEEP_CHARS
        ]
        if not candidates:
            break
        level = _water_level(sorted((counts[k] for k in candidates), reverse=True), -deficit)
        for k in candidates:
            if counts[k] <= level:
                continue
            text = originals.setdefault(k, content_text(turn[k].get("content")))
            current = keep.get(k, len(text))
            wanted = int(current * level / counts[k]) - MARKER_ROOM - len(TRUNCATION_WHY)
            keep[k] = max(TRUNCATE_MIN_KEEP_CHARS, min(wanted, int(current * TRUNCATE_MIN_SHRINK)))
            new = {**turn[k], "content": truncate_middle(text, keep[k], why=TRUNCATION_WHY)}
            new_count = counter.count_message(new)
            deficit += counts[k] - new_count
            turn[k], counts[k] = new, new_count
    return len(originals)


def _water_level(sizes: list[int], excess: int) -> float:
    """The level L such that cutting every size above L down to L removes ``excess`` (plus markers)."""
    total = 0
    for n, size in enumerate(sizes, start=1):
        total += size
        level = (total - excess - n * MARKER_TOKENS) / n
        if n == len(sizes) or level >= sizes[n]:
            return max(level, 0.0)
    return 0.0


# --- error messages -------------------------------------------------------------------------------

ADVICE = (
    'Raise `context_window` for this model in config.toml ([models."<model>"]) if the model allows more, '
    "remove skills or MCP servers you do not need, or shorten AGENTS.md and MEMORY.md"
)


def _fixed_parts(fixed: FixedSizes) -> str:
    layers = ", ".join(f"{name} {size:,}" for name, size in fixed.layers.items())
    system = f"system prompt {fixed.system_prompt:,}" + (f" ({layers})" if layers else "")
    return f"{system}, tool schemas {fixed.tools:,}, summary {fixed.summary:,}"


def _budget_text(limit: int, calibration: float) -> str:
    text = f"the budget is {limit:,} tokens (context window − max output tokens − safety margin)"
    if calibration > 1.0:
        text += f", with counts multiplied by the provider's calibration ratio {calibration:.2f}"
    return text


def _sizes(fixed: FixedSizes, limit: int, **extra: int) -> dict[str, int]:
    return {
        **fixed.layers,
        "system_prompt": fixed.system_prompt,
        "tools": fixed.tools,
        "summary": fixed.summary,
        "fixed": fixed.total,
        **extra,
        "budget": limit,
    }


def _fixed_overflow(fixed: FixedSizes, limit: int, calibration: float) -> tuple[str, dict[str, int], float]:
    message = (
        f"The request cannot fit the context window: the fixed part alone needs {fixed.total:,} tokens "
        f"({_fixed_parts(fixed)}), and {_budget_text(limit, calibration)}. {ADVICE}."
    )
    return message, _sizes(fixed, limit), calibration


def _turn_overflow(
    fixed: FixedSizes, turn_tokens: int, user_tokens: int, limit: int, calibration: float
) -> tuple[str, dict[str, int], float]:
    message = (
        f"The request cannot fit the context window: the current turn needs {turn_tokens:,} tokens "
        f"(your message {user_tokens:,}) even with its tool results cut, on top of the fixed part's "
        f"{fixed.total:,} ({_fixed_parts(fixed)}), and {_budget_text(limit, calibration)}. "
        f"Send a shorter message, or: {ADVICE}; /compact shortens the summary."
    )
    return message, _sizes(fixed, limit, current_turn=turn_tokens), calibration
