"""The memory entries journal: ``history.jsonl`` (one entry a line) and ``.cursor`` beside it.

Each entry is ``{"cursor", "at", "session_id", "kind", "content", ...}``; cursors count up from 1 and
never repeat. ``.cursor`` holds the cursor of the last entry Dream consolidated: the entries after it
are pending. Appends take an ``flock`` on the journal so two catbuddy processes never hand out the same
cursor; reading never trusts the file (a corrupt line is skipped and reported, never fatal).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from catbuddy.memory.files import atomic_write
from catbuddy.memory.paths import MemoryPaths

COMPACTION, SESSION = "compaction", "session"
ENTRY_KINDS = (COMPACTION, SESSION)
TAIL_BYTES = 64 * 1024  # enough to find the last complete line of any entry


@dataclass(frozen=True)
class MemoryEntry:
    cursor: int
    at: str
    session_id: str
    kind: str
    content: str
    extra: dict[str, Any] = field(default_factory=dict)  # record_id of a compaction, through of a session

    def to_json(self) -> dict[str, Any]:
        return {
            "cursor": self.cursor,
            "at": self.at,
            "session_id": self.session_id,
            "kind": self.kind,
            "content": self.content,
            **self.extra,
        }


@dataclass
class JournalRead:
    entries: list[MemoryEntry]
    problems: list[str] = field(default_factory=list)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_entry(line: str) -> MemoryEntry | str:
    """The entry on one line, or why it is not one."""
    try:
        data = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        return f"not JSON ({exc.msg if isinstance(exc, json.JSONDecodeError) else exc})"
    if not isinstance(data, dict):
        return "not a JSON object"
    cursor = data.get("cursor")
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 1:
        return "no positive integer `cursor`"
    content = data.get("content")
    if not isinstance(content, str):
        return "no string `content`"
    known = {"cursor", "at", "session_id", "kind", "content"}
    return MemoryEntry(
        cursor,
        str(data.get("at") or ""),
        str(data.get("session_id") or ""),
        str(data.get("kind") or ""),
        content,
        {k: v for k, v in data.items() if k not in known},
    )


class Journal:
    def __init__(self, paths: MemoryPaths) -> None:
        self.paths = paths

    # --- the cursor -------------------------------------------------------------------------------

    def cursor(self) -> tuple[int, str | None]:
        """The cursor of the last consolidated entry (0: none yet), and a problem if the file was bad."""
        try:
            text = self.paths.cursor.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return 0, None
        except OSError as exc:
            return 0, f"cannot read {self.paths.cursor}: {exc.strerror or exc}"
        if text.isdigit():
            return int(text), None
        return 0, f"{self.paths.cursor} does not hold a number ({text[:40]!r}); reading from the start"

    def set_cursor(self, cursor: int) -> None:
        atomic_write(self.paths.cursor, f"{cursor}\n")

    # --- appending --------------------------------------------------------------------------------

    def append(self, session_id: str, kind: str, content: str, **extra: Any) -> MemoryEntry:
        """Append an entry with the next cursor (under a lock, flushed and fsync'd)."""
        path = self.paths.journal
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                entry = MemoryEntry(
                    self._last_cursor(handle) + 1, now_iso(), session_id, kind, content, extra
                )
                handle.seek(0, os.SEEK_END)
                if handle.tell() and not self._ends_with_newline(handle):
                    handle.write(b"\n")  # a torn last line must not swallow this entry
                handle.write(json.dumps(entry.to_json(), ensure_ascii=False).encode("utf-8") + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return entry

    @staticmethod
    def _ends_with_newline(handle: Any) -> bool:
        handle.seek(-1, os.SEEK_END)
        last = handle.read(1)
        handle.seek(0, os.SEEK_END)
        return bool(last == b"\n")

    def _last_cursor(self, handle: Any) -> int:
        """The highest cursor in the file: from the tail when its last line is whole, else a full scan."""
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        if not size:
            return self._highest_cursor_in(b"")
        handle.seek(max(0, size - TAIL_BYTES))
        tail = handle.read()
        lines = [line for line in tail.split(b"\n") if line.strip()]
        for raw in reversed(lines[1:] if size > TAIL_BYTES else lines):
            parsed = parse_entry(raw.decode("utf-8", errors="replace"))
            if isinstance(parsed, MemoryEntry):
                return max(parsed.cursor, self._cursor_floor())
        handle.seek(0)
        return self._highest_cursor_in(handle.read())

    def _highest_cursor_in(self, data: bytes) -> int:
        highest = self._cursor_floor()
        for raw in data.split(b"\n"):
            parsed = parse_entry(raw.decode("utf-8", errors="replace")) if raw.strip() else None
            if isinstance(parsed, MemoryEntry):
                highest = max(highest, parsed.cursor)
        return highest

    def _cursor_floor(self) -> int:
        # A journal lost or emptied by hand must not hand out cursors Dream already consumed.
        return self.cursor()[0]

    # --- reading ----------------------------------------------------------------------------------

    def read(self) -> JournalRead:
        """Every readable entry in file order; corrupt lines skipped and counted in ``problems``."""
        result = JournalRead([])
        bad: list[int] = []
        for number, line in self._lines():
            parsed = parse_entry(line)
            if isinstance(parsed, MemoryEntry):
                result.entries.append(parsed)
            else:
                bad.append(number)
                if len(bad) <= 3:
                    result.problems.append(f"{self.paths.journal} line {number}: skipped, {parsed}")
        if len(bad) > 3:
            result.problems.append(f"{self.paths.journal}: {len(bad) - 3} more corrupt lines skipped")
        return result

    def _lines(self) -> Iterator[tuple[int, str]]:
        try:
            with open(self.paths.journal, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        yield number, line
        except FileNotFoundError:
            return

    def pending(self) -> JournalRead:
        """The entries after the cursor, oldest first (problems include a bad cursor file)."""
        cursor, problem = self.cursor()
        read = self.read()
        pending = sorted((e for e in read.entries if e.cursor > cursor), key=lambda e: e.cursor)
        return JournalRead(pending, ([problem] if problem else []) + read.problems)

    def pending_count(self) -> int:
        """How many entries wait for Dream."""
        cursor = self.cursor()[0]
        count = 0
        for _, line in self._lines():
            parsed = parse_entry(line)
            if isinstance(parsed, MemoryEntry) and parsed.cursor > cursor:
                count += 1
        return count

    def last_session_entry(self, session_id: str) -> MemoryEntry | None:
        """The newest ``session`` entry of ``session_id`` (what a resumed session already handed over)."""
        found: MemoryEntry | None = None
        for _, line in self._lines():
            if session_id not in line:
                continue
            parsed = parse_entry(line)
            if isinstance(parsed, MemoryEntry) and parsed.session_id == session_id and parsed.kind == SESSION:
                found = parsed
        return found
