"""Steps 1–3 of context governance (docs/architecture.md §4): drop orphans, backfill, microcompact.

Every function is pure: it returns a new list and never changes the list or the dicts it was given
(the persisted history stays exactly as it was). Unchanged messages are passed through as the very
same dict objects, so the token counter's per-message cache keeps hitting on them turn after turn;
only backfilled and compacted messages are new dicts.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from catbuddy.config import ContextSettings
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.messages import content_text

Message = Mapping[str, Any]

# Which tools' old results may be stubbed is each tool's own declaration (``Tool.microcompactable``);
# the caller passes the set its registry gives (``ToolRegistry.microcompactable``).
UNAVAILABLE_RESULT = "[Tool result unavailable — call was interrupted or lost]"
MICROCOMPACT_PREVIEW_CHARS = 80
MICROCOMPACT_MEMO_LIMIT = 50_000  # remembered decisions per counter before the memo is reset
__all__ = [
    "UNAVAILABLE_RESULT",
    "MicrocompactStats",
    "RepairStats",
    "backfill_missing_results",
    "call_ids",
    "compacted_text",
    "drop_orphans",
    "is_protocol_valid",
    "repair",
    "unanswered_tail",
    "microcompact",
]


def call_ids(message: Message) -> list[str]:
    """The ids of an assistant message's tool calls, in call order (empty for anything else)."""
    if message.get("role") != "assistant":
        return []
    calls = message.get("tool_calls")
    if not calls:
        return []
    ids = []
    for call in calls:
        call_id = call.get("id") if isinstance(call, dict | Mapping) else None
        # A call without a string id cannot be answered; treat it as absent rather than crash.
        if isinstance(call_id, str):
            ids.append(call_id)
    return ids


def _result_id(message: Message) -> str | None:
    call_id = message.get("tool_call_id")
    return call_id if isinstance(call_id, str) else None


def unanswered_tail(messages: Sequence[Message]) -> list[str] | None:
    """The call ids left unanswered at the very end when everything before is protocol-valid
    (empty: all valid), or None when steps 1–2 have more to repair. One tight pass, because on
    almost every turn the history is valid, or valid but for calls cut off by an interruption."""
    pending: list[str] = []  # ids still to be answered, reversed
    for message in messages:
        if message.get("role") == "tool":
            if not pending or message.get("tool_call_id") != pending.pop():
                return None
            continue
        if pending:
            return None
        if message.get("tool_calls"):
            pending = call_ids(message)
            pending.reverse()
    pending.reverse()
    return pending


def is_protocol_valid(messages: Sequence[Message]) -> bool:
    """True when steps 1–2 would change nothing."""
    return unanswered_tail(messages) == []


def repair(messages: Sequence[Message]) -> tuple[list[Message], int, RepairStats]:
    """Steps 1 and 2 together, with a fast path for the usual, (almost) valid history.

    Returns the repaired messages, the number of orphans dropped and the backfill stats."""
    missing = unanswered_tail(messages)
    if missing is not None:
        return list(messages) + [_placeholder(i) for i in missing], 0, RepairStats(backfilled=len(missing))
    kept, orphans = drop_orphans(messages)
    repaired, stats = backfill_missing_results(kept)
    return repaired, orphans, stats


# --- step 1 ----------------------------------------------------------------------------------------


def drop_orphans(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Remove tool results that answer no earlier assistant tool call.

    A result that comes *before* its call is an orphan too: nothing it could be paired with has been
    said yet, and step 2 backfills the call it claims to answer.
    """
    seen: set[str] = set()
    kept: list[Message] = []
    dropped = 0
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            seen.update(call_ids(message))
        elif role == "tool" and _result_id(message) not in seen:
            dropped += 1
            continue
        kept.append(message)
    return kept, dropped


# --- step 2 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepairStats:
    backfilled: int = 0
    duplicates_dropped: int = 0
    results_moved: int = 0


def _placeholder(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": UNAVAILABLE_RESULT}


def backfill_missing_results(messages: Sequence[Message]) -> tuple[list[Message], RepairStats]:
    """Put exactly one result right after each assistant tool-call message, one per call, in call order.

    A result belongs to the latest earlier call with its id (some providers reuse ids such as
    ``call_0`` across turns). The first result for a call wins, later ones are dropped; a result
    separated from its call is moved next to it; a call with no result gets ``UNAVAILABLE_RESULT``.
    Tool messages that answer nothing are left where they are: removing them is step 1's job.
    """
    owner: dict[str, tuple[int, list[int]]] = {}  # call id -> (assistant index, call positions)
    slots: dict[int, list[int | None]] = {}  # assistant index -> result index per call
    ids_at: dict[int, list[str]] = {}
    consumed: set[int] = set()  # tool messages placed after their call, or dropped as duplicates
    duplicates = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            ids = call_ids(message)
            if ids:
                ids_at[index] = ids
                slots[index] = [None] * len(ids)
                positions: dict[str, list[int]] = {}
                for position, call_id in enumerate(ids):
                    positions.setdefault(call_id, []).append(position)
                for call_id, where in positions.items():
                    owner[call_id] = (index, where)
        elif role == "tool":
            found = owner.get(_result_id(message) or "")
            if found is None:
                continue
            assistant, where = found
            free = [p for p in where if slots[assistant][p] is None]
            if free:
                slots[assistant][free[0]] = index
            else:
                duplicates += 1
            consumed.add(index)

    out: list[Message] = []
    backfilled = moved = 0
    for index, message in enumerate(messages):
        if index in consumed:
            continue
        out.append(message)
        if index not in slots:
            continue
        block_end = index + 1  # the run of tool messages that directly follows the call
        while block_end < len(messages) and messages[block_end].get("role") == "tool":
            block_end += 1
        last = index
        for call_id, result in zip(ids_at[index], slots[index], strict=True):
            if result is None:
                out.append(_placeholder(call_id))
                backfilled += 1
                continue
            if not index < result < block_end or result < last:
                moved += 1
            else:
                last = result
            out.append(messages[result])
    return out, RepairStats(backfilled, duplicates, moved)


# --- step 3 ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MicrocompactStats:
    compacted: int = 0
    tokens_saved: int = 0
    pending: int = 0  # old results left verbatim until their batch is big enough
    pending_tokens: int = 0  # what stubbing those would save
    forced: bool = False  # the batch rule was overridden: the request would not fit otherwise


def compacted_text(tool: str, text: str) -> str:
    return f"[{tool} result: {text[:MICROCOMPACT_PREVIEW_CHARS]}...]"


def _already_compacted(tool: str, text: str) -> bool:
    return text.startswith(f"[{tool} result: ") and text.endswith("...]")


def microcompact(
    messages: Sequence[Message],
    counter: TokenCounter,
    keep_recent: int = ContextSettings.keep_recent_results,
    min_tokens: int = 0,
    *,
    compactable: Collection[str],
    force: bool = False,
) -> tuple[list[Message], MicrocompactStats]:
    """Shrink results of the ``compactable`` tools older than the ``keep_recent`` newest ones to a preview, in
    batches of at least ``min_tokens`` saved (docs/architecture.md §4, "Batched microcompaction").

    Walking the old results oldest first, a batch closes at the result whose saving brings the batch's
    total to ``min_tokens``; results up to the last closed batch are stubbed, the rest stay verbatim.
    Old results only ever gain newer ones, so earlier batch ends never move: the stubbed part grows in
    steps of at least ``min_tokens``, and between steps the request's prefix is byte-stable. The rule is a
    function of the messages alone, so every process makes the same request of the same history.
    ``force`` stubs every old result (budget pressure: the request would not fit otherwise).

    The tool name is the matching call's ``function.name`` (the tool message's own ``name`` when no
    call is found). A result is only replaced when that saves tokens, so the step never grows a
    message and applying it twice changes nothing more.
    """
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be 0 or more, got {keep_recent}")
    if min_tokens < 0:
        raise ValueError(f"min_tokens must be 0 or more, got {min_tokens}")
    found = _bulky_results(messages, compactable)
    old = found[: max(0, len(found) - keep_recent)]
    if not old:
        return list(messages), MicrocompactStats()
    memo = _memo_for(counter)
    decisions: list[tuple[int, tuple[str, int]]] = []
    for index, tool in old:
        message = messages[index]
        content = message.get("content")
        text = content if isinstance(content, str) else content_text(content)
        key = (tool, text)  # the tokens saved depend on nothing else: other fields count the same
        decision = memo.get(key, _MISSING)
        if decision is _MISSING:
            decision = memo[key] = _decide(message, tool, text, counter)
        if decision is not None:
            decisions.append((index, decision))
    if len(memo) > MICROCOMPACT_MEMO_LIMIT:
        memo.clear()
    natural = _batch_end(decisions, min_tokens)
    batched = len(decisions) if force else natural
    out = list(messages)
    saved = 0
    for index, (replacement, tokens_saved) in decisions[:batched]:
        out[index] = {**messages[index], "content": replacement}
        saved += tokens_saved
    pending = decisions[batched:]
    return out, MicrocompactStats(
        compacted=batched,
        tokens_saved=saved,
        pending=len(pending),
        pending_tokens=sum(tokens for _, (_, tokens) in pending),
        forced=batched > natural,
    )


def old_result_count(
    messages: Sequence[Message],
    compactable: Collection[str],
    keep_recent: int = ContextSettings.keep_recent_results,
) -> int:
    """How many results microcompaction may stub (those past the ``keep_recent`` newest); counts nothing."""
    return max(0, len(_bulky_results(messages, compactable)) - keep_recent)


def _bulky_results(messages: Sequence[Message], compactable: Collection[str]) -> list[tuple[int, str]]:
    """(index, tool name) of every result of a ``compactable`` tool's call, oldest first."""
    names: dict[str, str] = {}
    found: list[tuple[int, str]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                # `dict |` first: isinstance against the Mapping ABC alone is slow on this hot path.
                if isinstance(call, dict | Mapping) and isinstance(call_id := call.get("id"), str):
                    function = call.get("function")
                    name = function.get("name") if isinstance(function, dict | Mapping) else None
                    names[call_id] = name if isinstance(name, str) else ""
        elif role == "tool":
            result_id = message.get("tool_call_id")
            tool = (names.get(result_id) if isinstance(result_id, str) else None) or message.get("name") or ""
            # A backfilled placeholder is not a result: it must not push a real one out of the recent few.
            if tool in compactable and message.get("content") != UNAVAILABLE_RESULT:
                found.append((index, tool))
    return found


def _batch_end(decisions: Sequence[tuple[int, tuple[str, int]]], min_tokens: int) -> int:
    """How many of ``decisions`` (oldest first) fall in closed batches of at least ``min_tokens`` saved."""
    end = running = 0
    for position, (_, (_, tokens_saved)) in enumerate(decisions):
        running += tokens_saved
        if running >= min_tokens:
            end, running = position + 1, 0
    return end


def _decide(message: Message, tool: str, text: str, counter: TokenCounter) -> tuple[str, int] | None:
    """The replacement text and the tokens it saves, or None when compacting would not save any."""
    replacement = compacted_text(tool, text)
    # Cheap character check first, so results that are already short cost no counting.
    if len(text) <= len(replacement) or _already_compacted(tool, text):
        return None
    before = counter.count_message(message)
    after = counter.count_message({**message, "content": replacement})
    return (replacement, before - after) if after < before else None


# The same old results are compacted again every turn (the persisted history keeps them whole), so
# decisions are remembered per counter. Keys hold the result strings the history already holds.
_MISSING: Any = object()
_MEMOS: weakref.WeakKeyDictionary[TokenCounter, dict[tuple[Any, ...], tuple[str, int] | None]] = (
    weakref.WeakKeyDictionary()
)


def _memo_for(counter: TokenCounter) -> dict[tuple[Any, ...], tuple[str, int] | None]:
    memo = _MEMOS.get(counter)
    if memo is None:
        memo = _MEMOS[counter] = {}
    return memo
