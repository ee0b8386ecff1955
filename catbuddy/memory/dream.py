"""How a Dream run ended: ``DreamStatus`` and ``DreamResult`` (the run itself is ``memory/dreamer.py``).

Kept apart from the ``Dreamer`` so the agent loop and the front ends can name a result without importing
Dream's parsing, checking and version log (~25 ms at start-up), which only a Dream run needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class DreamStatus(StrEnum):
    APPLIED = "applied"  # files written, cursor moved
    UNCHANGED = "unchanged"  # a valid answer that changes nothing (all NONE or duplicates): cursor moved
    NOTHING = "nothing"  # no pending entries: no model call
    DRY_RUN = "dry_run"  # the proposal shown, nothing written
    FAILED = "failed"  # the call failed or the answer was rejected twice: nothing written
    BUSY = "busy"  # another process is dreaming
    STALE = "stale"  # a memory file changed while the proposal waited: dropped, tried again later
    DECLINED = "declined"  # the user declined the proposal: those entries are done with
    DEFERRED = "deferred"  # the user said "not now": nothing changes
    PAUSED = "paused"  # automatic Dream is paused after failures


@dataclass
class DreamResult:
    status: DreamStatus
    message: str
    added: int = 0
    removed: int = 0
    updated: int = 0
    entries: int = 0
    diff: str = ""
    change: int | None = None
    problems: list[str] = field(default_factory=list)
    reason: str = ""  # a failure in a few words, for a one-line notice ("" : the message says it)

    @property
    def ok(self) -> bool:
        return self.status not in (DreamStatus.FAILED, DreamStatus.BUSY, DreamStatus.PAUSED)

    @property
    def counts(self) -> str:
        return counts_text(self.added, self.removed, self.updated)


def counts_text(added: int, removed: int, updated: int) -> str:
    return f"+{added} −{removed} ~{updated}"


def entries_text(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"
