"""The working history rebuilt from session records: the latest summary plus what came after it.

Compaction never rewrites the file (docs/architecture.md §5, §6): the raw messages stay and a ``compaction`` record
says which message the summary folds through. Rebuilding takes the newest compaction that no
``compaction_undo`` record voids, because each summary already folds in the one before it; voiding
the newest one brings back the history as it was before it, and several undos walk back several
compactions. Healing (orphans, missing tool results) is governance's job and happens later, on every
request.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from catbuddy.session.records import (
    CompactionRecord,
    CompactionUndoRecord,
    EventRecord,
    MessageRecord,
    Record,
)

SUMMARY_PREFIX = "[Previous conversation summary]: "
REWIND_KIND = "conversation_rewound"  # an event record: the messages from ``to`` on no longer count
# An assistant message's reasoning (catbuddy.llm.reasoning): kept on disk, sent back only within the user
# turn that produced it, so the working history sheds it when the next user message arrives.
REASONING_KEYS = ("reasoning", "reasoning_content", "reasoning_details")


# A user message's meta: the files the user put back (/undo, /redo, /rewind) since the turn before, as
# [{"action", "turns", "paths"}], for the compaction ledger; the message's text tells the model.
RESTORED_META_KEY = "restored"


@dataclass
class HistoryEntry:
    id: str  # the message record id, e.g. "m000042"
    message: dict[str, Any]  # the OpenAI dict as loaded (shared, not copied: do not mutate)
    # A tool message's stored ToolMeta (catbuddy.tool_meta), or a user message's RESTORED_META_KEY; never sent.
    meta: dict[str, Any] | None = None


@dataclass
class WorkingHistory:
    summary: str | None = None
    summary_id: str | None = None  # id of the compaction record the summary comes from
    entries: list[HistoryEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # What the summary's compaction record carries besides the summary (the ledger, the user's words,
    # the model's prose, …): what the next compaction merges with.
    compaction_data: dict[str, Any] = field(default_factory=dict)
    folded: int = 0  # messages of the session before ``entries`` (folded into the summary)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages after the summary, as OpenAI dicts (the summary itself is ``summary_message``)."""
        return [entry.message for entry in self.entries]


def without_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("role") != "assistant" or not any(k in message for k in REASONING_KEYS):
        return message
    return {k: v for k, v in message.items() if k not in REASONING_KEYS}


def shed_old_reasoning(entries: list[HistoryEntry]) -> list[HistoryEntry]:
    """The entries with reasoning dropped from every assistant message before the last user message
    (new entries where something changes; the transcript keeps the originals)."""
    last_user = max((i for i, e in enumerate(entries) if e.message.get("role") == "user"), default=-1)
    out = []
    for index, entry in enumerate(entries):
        bare = without_reasoning(entry.message) if index < last_user else entry.message
        out.append(entry if bare is entry.message else HistoryEntry(entry.id, bare, entry.meta))
    return out


def summary_message(summary: str) -> dict[str, Any]:
    """The pinned first user message that carries the rolling summary."""
    return {"role": "user", "content": SUMMARY_PREFIX + summary}


def active_compactions(
    records: Iterable[Record], problems: list[str] | None = None
) -> list[CompactionRecord]:
    """The compactions that still count, oldest first: every one no ``compaction_undo`` voids."""
    active: list[CompactionRecord] = []
    for record in records:
        if isinstance(record, CompactionRecord):
            active.append(record)
        elif isinstance(record, CompactionUndoRecord):
            kept = [c for c in active if c.id != record.voids]
            if len(kept) == len(active) and problems is not None:
                problems.append(f"an undo voids compaction {record.voids}, which is not in the session")
            active = kept
    return active


def message_number(message_id: str) -> int:
    """``m000042`` -> 42 (message ids grow with each message, rewound or not)."""
    digits = "".join(c for c in message_id if c.isdigit())
    return int(digits) if digits else 0


def without_rewound(records: Iterable[Record]) -> list[Record]:
    """The records that still count after every rewind: a rewind drops the messages before it from its
    ``to`` message on, and the compactions that folded any of them (the file itself only grows)."""
    kept: list[Record] = []
    for record in records:
        if (
            isinstance(record, EventRecord)
            and record.kind == REWIND_KIND
            and isinstance(record.data.get("to"), str)
        ):
            cut = message_number(record.data["to"])
            kept = [
                r
                for r in kept
                if not (isinstance(r, MessageRecord) and message_number(r.id) >= cut)
                and not (isinstance(r, CompactionRecord) and message_number(r.folded_through) >= cut)
            ]
            continue
        kept.append(record)
    return kept


def rebuild_history(records: Iterable[Record]) -> WorkingHistory:
    records = without_rewound(records)
    history = WorkingHistory()
    messages = [record for record in records if isinstance(record, MessageRecord)]
    active = active_compactions(records, history.problems)
    latest = active[-1] if active else None

    start = 0
    if latest is not None:
        history.summary, history.summary_id = latest.summary, latest.id
        history.compaction_data = dict(latest.extra)
        position = next((i for i, m in enumerate(messages) if m.id == latest.folded_through), None)
        if position is None:
            # The folded message may sit on a corrupt line. Keeping everything loses nothing; the
            # next compaction will fold it again.
            history.problems.append(
                f"compaction {latest.id} folds through message {latest.folded_through}, which is not in "
                f"the session; keeping all {len(messages)} messages after the summary"
            )
        else:
            start = position + 1
    history.folded = start
    history.entries = shed_old_reasoning(
        [HistoryEntry(id=m.id, message=m.message, meta=m.meta) for m in messages[start:]]
    )
    return history
