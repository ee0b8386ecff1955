"""Every write catbuddy makes to a MEMORY.md keeps the previous version first (docs/architecture.md §13).

``memory/versions/`` holds, per change and file, ``<change>-<file>.before.md`` (the text before; absent
when the file did not exist) and ``<change>-<file>.after.md``, and ``log.jsonl`` one line per file of a
change: time, source (dream, editor, tool:edit_file, undo, …), sessions consumed, lines added/removed.
A change groups the files one action wrote (a Dream run writes both). ``undo`` restores the newest
change not yet undone (again: the one before it) and is itself a change, so nothing is ever lost.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.errors import CatbuddyError
from catbuddy.memory.files import atomic_write, locked, read_or_none
from catbuddy.memory.journal import now_iso
from catbuddy.memory.paths import FILE_KEYS, MemoryPaths
from catbuddy.text import unified_diff

KEEP_CHANGES = 200  # changes whose before/after copies are kept; older ones keep their log line only
COUNTER_NAME = ".next"
LOCK_NAME = ".lock"
UNDO = "undo"


@dataclass(frozen=True)
class VersionRecord:
    change: int
    at: str
    source: str
    file: str  # "global" or "project"
    path: str
    sessions: tuple[str, ...]
    added: int
    removed: int
    existed: bool  # the file existed before the write
    deleted: bool = False  # the write removed the file (an undo back to "no file")
    undoes: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "change": self.change,
            "at": self.at,
            "source": self.source,
            "file": self.file,
            "path": self.path,
            "sessions": list(self.sessions),
            "added": self.added,
            "removed": self.removed,
            "existed": self.existed,
        }
        if self.deleted:
            data["deleted"] = True
        if self.undoes is not None:
            data["undoes"] = self.undoes
        return data

    @classmethod
    def from_json(cls, data: Any) -> VersionRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("change"), int):
            return None
        if data.get("file") not in FILE_KEYS:
            return None
        sessions = data.get("sessions")
        undoes = data.get("undoes")
        return cls(
            data["change"],
            str(data.get("at") or ""),
            str(data.get("source") or "?"),
            data["file"],
            str(data.get("path") or ""),
            tuple(str(s) for s in sessions) if isinstance(sessions, list) else (),
            int(data.get("added") or 0),
            int(data.get("removed") or 0),
            bool(data.get("existed", True)),
            bool(data.get("deleted", False)),
            undoes if isinstance(undoes, int) else None,
        )


@dataclass
class Change:
    id: int
    records: list[VersionRecord]
    undone_by: int | None = None

    @property
    def at(self) -> str:
        return self.records[0].at

    @property
    def source(self) -> str:
        return self.records[0].source

    @property
    def sessions(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for record in self.records:
            seen.update(dict.fromkeys(record.sessions))
        return tuple(seen)

    @property
    def undoes(self) -> int | None:
        return self.records[0].undoes


@dataclass
class History:
    changes: list[Change]
    problems: list[str] = field(default_factory=list)

    def get(self, change_id: int) -> Change | None:
        return next((c for c in self.changes if c.id == change_id), None)


@dataclass
class UndoResult:
    undone: Change
    change: Change | None  # the undo's own change (None: the files already held those versions)
    notes: list[str] = field(default_factory=list)


class VersionError(CatbuddyError):
    """Nothing to undo, an unknown change, versions pruned: the message says what to do instead."""


def count_changes(before: str, after: str) -> tuple[int, int]:
    """Lines added and removed going from ``before`` to ``after``."""
    added = removed = 0
    for line in unified_diff(before, after, "x").splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class MemoryVersions:
    def __init__(self, paths: MemoryPaths) -> None:
        self.paths = paths
        self.dir = paths.versions

    # --- writing ------------------------------------------------------------------------------------

    def write(
        self,
        texts: Mapping[str, str | None],
        *,
        source: str,
        sessions: Sequence[str] = (),
        undoes: int | None = None,
    ) -> Change | None:
        """Write ``texts`` ({"global"|"project": new text, or None to remove the file}) atomically, each
        after keeping its previous version; one change for all. None when nothing differed."""
        with self._locked():
            current = {key: read_or_none(self.paths.memory_file(key)) for key in texts}
            todo = {key: text for key, text in texts.items() if text != current[key]}
            if not todo:
                return None
            change = self._allocate()
            records = []
            for key, text in todo.items():
                path = self.paths.memory_file(key)
                self._keep(change, key, "before", current[key])
                if text is None:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                else:
                    atomic_write(path, text)
                records.append(self._log(change, key, current[key], text, source, sessions, undoes))
            self._prune()
        return Change(change, records)

    def begin(self, path: Path, *, source: str, sessions: Sequence[str] = ()) -> PendingWrite | None:
        """For a write catbuddy does not make itself (a tool's): keep the previous version now; ``finish``
        logs the change once the write is done. None when ``path`` is not a MEMORY.md."""
        key = self.paths.key_of(path)
        if key is None:
            return None
        with self._locked():
            change = self._allocate()
            before = read_or_none(self.paths.memory_file(key))
            self._keep(change, key, "before", before)
        return PendingWrite(self, change, key, before, source, tuple(sessions))

    def _finish(self, pending: PendingWrite) -> Change | None:
        with self._locked():
            after = read_or_none(self.paths.memory_file(pending.key))
            if after == pending.before:
                with contextlib.suppress(FileNotFoundError):
                    self._copy_path(pending.change, pending.key, "before").unlink()
                return None
            record = self._log(
                pending.change, pending.key, pending.before, after, pending.source, pending.sessions, None
            )
            self._prune()
        return Change(pending.change, [record])

    # --- reading ------------------------------------------------------------------------------------

    def history(self) -> History:
        records: list[VersionRecord] = []
        problems: list[str] = []
        for number, line in self._log_lines():
            try:
                record = VersionRecord.from_json(json.loads(line))
            except ValueError:
                record = None
            if record is None:
                problems.append(f"{self.paths.versions_log} line {number}: skipped, not a version record")
            else:
                records.append(record)
        by_id: dict[int, Change] = {}
        for record in records:
            by_id.setdefault(record.change, Change(record.change, [])).records.append(record)
        changes = sorted(by_id.values(), key=lambda c: c.id)
        for change in changes:
            if change.undoes is not None and change.undoes in by_id:
                by_id[change.undoes].undone_by = change.id
        return History(changes, problems)

    def texts(self, change: Change, key: str) -> tuple[str | None, str | None]:
        """The file's text before and after ``change`` (None: no file); VersionError once pruned."""
        record = next(r for r in change.records if r.file == key)
        before = self._read_copy(change.id, key, "before") if record.existed else None
        after = None if record.deleted else self._read_copy(change.id, key, "after")
        if (record.existed and before is None) or (not record.deleted and after is None):
            raise VersionError(
                f"the versions of change #{change.id} are no longer kept (only the last {KEEP_CHANGES} changes are)"
            )
        return before, after

    def diff(self, change_id: int | None = None) -> tuple[Change, str]:
        history = self.history()
        if not history.changes:
            raise VersionError("no memory changes yet: Dream, /memory and the model's edits are logged here")
        change = history.changes[-1] if change_id is None else history.get(change_id)
        if change is None:
            known = f"#{history.changes[0].id}–#{history.changes[-1].id}"
            raise VersionError(
                f"there is no change #{change_id}; changes are {known} (see `catbuddy memory log`)"
            )
        parts = []
        for record in change.records:
            before, after = self.texts(change, record.file)
            parts.append(unified_diff(before or "", after or "", f"{record.file}/MEMORY.md"))
        return change, "".join(parts)

    # --- undo ---------------------------------------------------------------------------------------

    def undo(self, sessions: Sequence[str] = ()) -> UndoResult:
        """Put back the files as they were before the newest change not yet undone."""
        history = self.history()
        target = next(
            (c for c in reversed(history.changes) if c.source != UNDO and c.undone_by is None), None
        )
        if target is None and not history.changes:
            raise VersionError("nothing to undo: no memory changes yet")
        if target is None:
            raise VersionError("nothing to undo: every logged memory change is already undone")
        texts: dict[str, str | None] = {}
        notes: list[str] = []
        for record in target.records:
            before, after = self.texts(target, record.file)
            current = read_or_none(self.paths.memory_file(record.file))
            if current != after:
                notes.append(
                    f"{record.path} changed after change #{target.id}; its current text is kept in the undo's versions"
                )
            texts[record.file] = before
        change = self.write(texts, source=UNDO, sessions=sessions, undoes=target.id)
        if change is None:
            # Nothing to write (the files already match): still mark the change undone.
            with self._locked():
                number = self._allocate()
                record = target.records[0]
                text = read_or_none(self.paths.memory_file(record.file))
                self._keep(number, record.file, "before", text)
                self._log(number, record.file, text, text, UNDO, sessions, target.id)
        return UndoResult(target, change, notes)

    # --- files --------------------------------------------------------------------------------------

    def _copy_path(self, change: int, key: str, side: str) -> Path:
        return self.dir / f"{change:06d}-{key}.{side}.md"

    def _keep(self, change: int, key: str, side: str, text: str | None) -> None:
        if text is not None:
            atomic_write(self._copy_path(change, key, side), text)

    def _read_copy(self, change: int, key: str, side: str) -> str | None:
        return read_or_none(self._copy_path(change, key, side))

    def _log(
        self,
        change: int,
        key: str,
        before: str | None,
        after: str | None,
        source: str,
        sessions: Sequence[str],
        undoes: int | None,
    ) -> VersionRecord:
        self._keep(change, key, "after", after)
        added, removed = count_changes(before or "", after or "")
        record = VersionRecord(
            change,
            now_iso(),
            source,
            key,
            str(self.paths.memory_file(key)),
            tuple(sessions),
            added,
            removed,
            existed=before is not None,
            deleted=after is None,
            undoes=undoes,
        )
        with open(self.paths.versions_log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        return record

    def _log_lines(self) -> Iterator[tuple[int, str]]:
        try:
            with open(self.paths.versions_log, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        yield number, line
        except FileNotFoundError:
            return

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        """Numbering and the log are shared by every catbuddy process of this project."""
        return locked(self.dir / LOCK_NAME)

    def _allocate(self) -> int:
        counter = self.dir / COUNTER_NAME
        text = read_or_none(counter) or ""
        highest = max((r.change for c in self.history().changes for r in c.records), default=0)
        number = max(int(text.strip()) if text.strip().isdigit() else 0, highest) + 1
        atomic_write(counter, f"{number}\n")
        return number

    def _prune(self) -> None:
        copies = sorted(self.dir.glob("[0-9]*-*.md"))
        ids = sorted({int(p.name.split("-", 1)[0]) for p in copies})
        old = set(ids[:-KEEP_CHANGES]) if len(ids) > KEEP_CHANGES else set()
        for path in copies:
            if int(path.name.split("-", 1)[0]) in old:
                with contextlib.suppress(OSError):
                    path.unlink()


@dataclass
class PendingWrite:
    """A MEMORY.md write in flight: its previous version is kept; ``finish`` logs it (or drops the copy)."""

    versions: MemoryVersions
    change: int
    key: str
    before: str | None
    source: str
    sessions: tuple[str, ...]

    def finish(self) -> Change | None:
        return self.versions._finish(self)
