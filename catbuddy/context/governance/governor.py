"""Context governance before every LLM call (docs/architecture.md §4): four pure, deterministic steps.

    history ─▶ drop orphans ─▶ backfill ─▶ microcompact ─▶ snip ─▶ system + summary + history

No LLM call, no I/O, and the given history is never changed: the persisted session stays as it was and
only the request is governed. Unchanged messages reach the token counter as the same dict objects it
has already counted, so a turn costs about one count of what is new.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from catbuddy.config import ContextSettings
from catbuddy.context.counting.measure import RequestSize, measure_request, newest_first_tokens
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.context.governance.governor_snip import (
    ContextOverflowError,
    FixedSizes,
    SnipResult,
    current_turn_start,
    snip_history,
)
from catbuddy.context.governance.governor_steps import (
    UNAVAILABLE_RESULT,
    MicrocompactStats,
    RepairStats,
    backfill_missing_results,
    call_ids,
    drop_orphans,
    is_protocol_valid,
    microcompact,
    repair,
)
from catbuddy.session.history import SUMMARY_PREFIX, summary_message, without_reasoning

__all__ = [
    "SUMMARY_PREFIX",
    "UNAVAILABLE_RESULT",
    "Budget",
    "ContextOverflowError",
    "FixedPart",
    "FixedSizes",
    "GovernanceReport",
    "GovernedContext",
    "MicrocompactStats",
    "RepairStats",
    "SnipResult",
    "backfill_missing_results",
    "current_turn_start",
    "drop_orphans",
    "govern_context",
    "is_protocol_valid",
    "microcompact",
    "protocol_problems",
    "repair",
    "snip_history",
    "summary_message",
]

Message = Mapping[str, Any]
HISTORY_COUNT_CAP = 4  # budgets' worth of history counted exactly for the report; the rest is estimated


@dataclass(frozen=True)
class Budget:
    context_window: int
    max_output_tokens: int
    safety_margin: int = ContextSettings.safety_margin

    @property
    def limit(self) -> int:
        """Tokens the prompt may use: window − max output − margin, never below 0."""
        return max(0, self.context_window - self.max_output_tokens - self.safety_margin)


@dataclass
class FixedPart:
    """What every request carries besides the history. Counted first; never snipped."""

    system_prompt: str
    tools: list[dict[str, Any]]
    summary: str | None = None  # the rolling summary text, without SUMMARY_PREFIX
    layer_tokens: dict[str, int] = field(default_factory=dict)  # identity, bootstrap, …: for errors


@dataclass
class GovernanceReport:
    """What governance did to this request. Token figures are raw counts (our tokenizer);
    ``calibrated_after`` is ``tokens_after`` times the calibration ratio, what the budget is held to."""

    orphans_dropped: int = 0
    duplicates_dropped: int = 0
    results_moved: int = 0
    backfilled: int = 0
    microcompacted: int = 0
    microcompact_tokens_saved: int = 0
    microcompact_pending_tokens: int = 0  # old results still verbatim, waiting for a big enough batch
    microcompact_forced: bool = False  # stubbed past the batch rule because the request would not fit
    messages_snipped: int = 0
    results_truncated: int = 0
    tokens_before: int = 0  # fixed part + history as given (estimated beyond a few windows' worth)
    tokens_before_exact: bool = True
    tokens_after: int = 0  # fixed part + governed history: the request as sent
    calibrated_after: int = 0
    fixed_tokens: int = 0
    budget: int = 0
    calibration: float = 1.0
    messages_before: int = 0
    messages_after: int = 0  # history messages kept (system prompt and summary not included)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def changed(self) -> bool:
        return any(
            (
                self.orphans_dropped,
                self.duplicates_dropped,
                self.results_moved,
                self.backfilled,
                self.microcompacted,
                self.messages_snipped,
                self.results_truncated,
            )
        )

    def summary(self) -> str:
        """One line for the UI, e.g. "3 old tool results compacted (12,400 tokens saved), 14 messages
        snipped"; "" when governance changed nothing."""
        parts = [
            _count(self.orphans_dropped, "orphan tool result", "dropped"),
            _count(self.duplicates_dropped, "duplicate tool result", "dropped"),
            _count(self.results_moved, "tool result", "moved next to its call", "moved next to their calls"),
            _count(self.backfilled, "missing tool result", "backfilled"),
            _count(self.microcompacted, "old tool result", "compacted")
            + (f" ({self.microcompact_tokens_saved:,} tokens saved)" if self.microcompacted else ""),
            _count(self.messages_snipped, "old message", "snipped"),
            _count(self.results_truncated, "tool result", "cut to fit the window"),
        ]
        return ", ".join(part for part in parts if part)


def _count(n: int, noun: str, verb: str, plural_verb: str | None = None) -> str:
    if not n:
        return ""
    return f"{n:,} {noun}{'' if n == 1 else 's'} {verb if n == 1 else plural_verb or verb}"


@dataclass
class GovernedContext:
    messages: list[dict[str, Any]]  # the request: system prompt, pinned summary (if any), history
    history: list[dict[str, Any]]  # the governed history part alone
    report: GovernanceReport
    size: RequestSize  # the request as sent, measured (the figure every front end shows)
    # True: sized by the byte upper bound before the tokenizer loaded (context/governance/bound.py); the messages
    # are what exact governance makes, the sizes are not counts to show or learn from.
    bound: bool = False


def govern_context(
    history: Sequence[Message],
    fixed: FixedPart,
    budget: Budget,
    counter: TokenCounter,
    *,
    compactable: Collection[str],
    keep_recent_results: int = ContextSettings.keep_recent_results,
    microcompact_min_tokens: int = 0,
    calibration: float = 1.0,
) -> GovernedContext:
    """The messages for this request, protocol-valid and within ``budget``.

    ``calibration`` (provider-reported prompt tokens ÷ our count) multiplies every count checked
    against the budget; values below 1 are treated as 1 so we never trust an under-count.
    Old results of the ``compactable`` tools (``ToolRegistry.microcompactable``) are stubbed in batches of at least ``microcompact_min_tokens`` saved, so the
    prefix stays byte-stable between batches; when the request would not fit without snipping, every
    result past the newest ``keep_recent_results`` is stubbed first.
    Raises ContextOverflowError if the fixed part, or the current turn even with its tool results
    cut, cannot fit.
    """
    ratio = _check_inputs(history, keep_recent_results, calibration)
    head: list[dict[str, Any]] = []
    if fixed.system_prompt:
        head.append({"role": "system", "content": fixed.system_prompt})
    if fixed.summary:
        head.append(summary_message(fixed.summary))
    fixed_size = measure_request(
        counter,
        system_prompt=fixed.system_prompt,
        tools=fixed.tools,
        summary=fixed.summary,
        calibration=ratio,
    )
    sizes = FixedSizes(
        system_prompt=fixed_size.system,
        tools=fixed_size.tools,
        summary=fixed_size.summary,
        layers=dict(fixed.layer_tokens),
        priming=fixed_size.priming,
    )
    # Counts are remembered by identity in the counter (checked with ``is``): the steps pass unchanged
    # messages through as the same objects, so a second layer of memo here would only add a lookup.
    count = counter.count_message

    history_before, before_exact = newest_first_tokens(history, count, cap=HISTORY_COUNT_CAP * budget.limit)
    tokens_before = sizes.total + history_before

    repaired, orphans, fixes = repair(history)
    compacted, micro = microcompact(
        repaired, counter, keep_recent_results, microcompact_min_tokens, compactable=compactable
    )

    def snip(messages: list[Message]) -> SnipResult:
        return snip_history(
            messages, counter, fixed=sizes, limit=budget.limit, calibration=ratio, count=count
        )

    try:
        snipped: SnipResult | None = snip(compacted)
    except ContextOverflowError:
        snipped = None  # maybe the turn fits once old results and reasoning are shed
    if snipped is None or snipped.snipped or snipped.truncated:
        before = compacted
        if micro.pending:
            # Budget pressure overrides the batch: stub everything old before any message is dropped.
            compacted, micro = microcompact(
                repaired,
                counter,
                keep_recent_results,
                microcompact_min_tokens,
                compactable=compactable,
                force=True,
            )
        # Then the model's old reasoning goes, before any message or result is cut (earlier turns' is
        # already gone, session/history.shed_old_reasoning); the newest reply keeps its own.
        compacted = _shed_reasoning(compacted) or compacted
        if snipped is None or compacted is not before:
            snipped = snip(compacted)  # raises ContextOverflowError if even that cannot fit

    kept = [_as_dict(m) for m in snipped.messages]
    size = replace(fixed_size, history=snipped.tokens)
    report = GovernanceReport(
        orphans_dropped=orphans,
        duplicates_dropped=fixes.duplicates_dropped,
        results_moved=fixes.results_moved,
        backfilled=fixes.backfilled,
        microcompacted=micro.compacted,
        microcompact_tokens_saved=micro.tokens_saved,
        microcompact_pending_tokens=micro.pending_tokens,
        microcompact_forced=micro.forced,
        messages_snipped=snipped.snipped,
        results_truncated=snipped.truncated,
        tokens_before=tokens_before,
        tokens_before_exact=before_exact,
        tokens_after=size.raw,
        calibrated_after=size.tokens,
        fixed_tokens=size.fixed,
        budget=budget.limit,
        calibration=ratio,
        messages_before=len(history),
        messages_after=len(kept),
    )
    return GovernedContext(messages=head + kept, history=kept, report=report, size=size)


def _shed_reasoning(history: Sequence[Message]) -> list[Message] | None:
    """The history without the reasoning of every assistant message but the newest; None if none had any."""
    newest = max((i for i, m in enumerate(history) if m.get("role") == "assistant"), default=-1)
    out: list[Message] = []
    changed = False
    for index, message in enumerate(history):
        bare = without_reasoning(_as_dict(message)) if index != newest else message
        changed = changed or bare is not message
        out.append(bare)
    return out if changed else None


def _as_dict(message: Message) -> dict[str, Any]:
    # The history is dicts in practice; only a foreign Mapping is copied (the counter keys on content).
    return message if isinstance(message, dict) else dict(message)


def _check_inputs(history: Sequence[Message], keep_recent: int, calibration: float) -> float:
    if keep_recent < 0:
        raise ValueError(f"keep_recent_results must be 0 or more, got {keep_recent}")
    if not math.isfinite(calibration) or calibration <= 0:
        raise ValueError(
            f"calibration must be a positive number (reported ÷ counted tokens), got {calibration}"
        )
    for index, message in enumerate(history):
        if not isinstance(message, dict | Mapping):  # dict first: the ABC check is slow
            raise TypeError(
                f"history[{index}] is a {type(message).__name__}, expected a message dict with a 'role'; "
                "the session loader should skip such lines"
            )
    return max(1.0, calibration)


def protocol_problems(messages: Sequence[Message]) -> list[str]:
    """Why ``messages`` would be rejected by an OpenAI-style API: every assistant tool call must be
    answered right after it, one tool message per call in call order, and no tool message may
    answer nothing. Empty when the structure is valid."""
    problems: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        role = message.get("role")
        if role == "tool":
            problems.append(f"message {index}: tool result {message.get('tool_call_id')!r} answers no call")
            index += 1
            continue
        index += 1
        for call_id in call_ids(message):
            following = messages[index] if index < len(messages) else None
            if following is None or following.get("role") != "tool":
                problems.append(f"message {index}: call {call_id!r} has no result right after it")
                continue
            if following.get("tool_call_id") != call_id:
                problems.append(
                    f"message {index}: expected the result of {call_id!r}, found {following.get('tool_call_id')!r}"
                )
            index += 1
    return problems
