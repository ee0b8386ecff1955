"""The open conversation: a locked session file, its working history and its full transcript.

One object owns the invariant "what is on disk is what was sent" (docs/architecture.md §6): a message
is appended to the JSONL first and only then to the working history and the transcript. The agent
loop swaps the whole conversation on /new and /resume; the runner and the compaction manager are
handed the current one.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from catbuddy.session.history import HistoryEntry, WorkingHistory, rebuild_history, shed_old_reasoning
from catbuddy.session.store import Session, SessionStore
from catbuddy.session.usage import USAGE_KIND, SessionUsage, usage_of


class Reportable(Protocol):
    """What the session keeps of a reported event (``agent/events.Event``): its kind, whether its type
    is marked as a record, and the record's fields."""

    @property
    def kind(self) -> str: ...

    @property
    def record(self) -> bool: ...

    def record_fields(self) -> dict[str, Any]: ...


@dataclass
class Conversation:
    session: Session
    history: WorkingHistory = field(default_factory=WorkingHistory)
    transcript: list[HistoryEntry] = field(default_factory=list)  # every message, folded ones too
    problems: list[str] = field(default_factory=list)  # found while loading, for the front end
    resumed: bool = False
    usage: SessionUsage = field(default_factory=SessionUsage)  # the provider's usage reports, summed

    @classmethod
    def create(cls, store: SessionStore, work_root: Any, model: str) -> Conversation:
        return cls(store.create(work_root, model))

    @classmethod
    def open(cls, store: SessionStore, session_id: str) -> Conversation:
        session = store.open(session_id)
        try:
            loaded = session.load()
            history = rebuild_history(loaded.records)
        except BaseException:
            session.close()
            raise
        return cls(
            session,
            history,
            [HistoryEntry(record.id, record.message, record.meta) for record in loaded.messages],
            list(loaded.problems) + list(history.problems),
            resumed=True,
            usage=usage_of(loaded.records),
        )

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def closed(self) -> bool:
        return self.session.closed

    def append(self, message: dict[str, Any], meta: Mapping[str, Any] | None = None) -> str:
        """Persist first, then add to the working history: what is on disk is what was sent. ``meta``
        (a tool message's ``ToolMeta``) is kept beside the message, never in it."""
        message_id = self.session.append_message(message, meta)
        entry = HistoryEntry(message_id, message, dict(meta) if meta is not None else None)
        if message.get("role") == "user":  # a new turn: earlier turns' reasoning is not sent again
            self.history.entries = shed_old_reasoning(self.history.entries)
        self.history.entries.append(entry)
        self.transcript.append(entry)
        return message_id

    def group(self) -> AbstractContextManager[None]:
        """One durable step: the records written inside are fsync'd together when it ends."""
        return self.session.group()

    def record(self, event: Reportable) -> None:
        """Keep a reported event whose type is marked as a record (stop, error, governance, approval,
        usage, …) as an event record of its kind with its fields; nothing once closed."""
        if not event.record:
            return
        data = event.record_fields()
        if event.kind == USAGE_KIND:
            self.usage = self.usage.add_report(data)
        if not self.session.closed:
            self.session.append_event(event.kind, **data)

    def fold(
        self,
        summary: str,
        keep: list[HistoryEntry],
        summary_id: str,
        data: dict[str, Any] | None = None,
        folded: int = 0,
    ) -> None:
        """After a compaction was recorded: the summary replaces everything before ``keep`` (``folded``
        more messages; ``data`` is what the record carries besides the summary)."""
        self.history.summary = summary
        self.history.summary_id = summary_id
        self.history.entries = keep
        self.history.compaction_data = dict(data or {})
        self.history.folded += folded

    def reload_history(self) -> WorkingHistory:
        """Rebuild the working history from the file (after an undo); blocking: call it in a thread."""
        loaded = self.session.load()
        self.history = rebuild_history(loaded.records)
        return self.history

    def close(self) -> None:
        self.session.close()
