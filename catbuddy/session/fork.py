"""A new session carrying another's history, up to a message: what `catbuddy sessions fork` and `/fork`
start from. The source file is only read; the caller records the fork in it."""

from __future__ import annotations

from pathlib import Path

from catbuddy.session.history import active_compactions, without_rewound
from catbuddy.session.records import CompactionRecord, MessageRecord, SessionError, read_session_file
from catbuddy.session.store import SessionStore

FORKED_KIND = "session_forked"  # the event record in both sessions (``role``: "fork" or "source")


def fork_session(store: SessionStore, source: Path, work_root: Path, at: str | None = None) -> str:
    """Copy the messages of ``source`` that still count (before message ``at``, if given) and the
    compactions in force over them into a new session; its id."""
    loaded = read_session_file(source)
    records = without_rewound(loaded.records)
    messages = [r for r in records if isinstance(r, MessageRecord)]
    source_id = loaded.meta.session_id if loaded.meta else source.stem
    if at is not None and at not in {m.id for m in messages}:
        raise SessionError(f"{at} is not a message of session {source_id}.", "Message ids look like m000003.")
    active = {c.id for c in active_compactions(records)}
    fork = store.create(work_root, (loaded.meta.model if loaded.meta else "") or "")
    new_ids: dict[str, str] = {}  # the fork numbers its messages afresh
    try:
        with fork.group():
            for record in records:
                if isinstance(record, MessageRecord):
                    if record.id == at:
                        break
                    new_ids[record.id] = fork.append_message(record.message, record.meta)
                elif (
                    isinstance(record, CompactionRecord)
                    and record.id in active
                    and record.folded_through in new_ids
                ):
                    fork.append_compaction(record.summary, new_ids[record.folded_through], **record.extra)
            fork.append_event(FORKED_KIND, role="fork", source=source_id, at=at or "")
    finally:
        fork.close()
    return fork.id
