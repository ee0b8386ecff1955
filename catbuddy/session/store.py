"""Writing, locking and listing sessions (docs/architecture.md §6).

Each session is ``<sessions_dir>/<id>.jsonl``, append-only: every record is written as one line, flushed
and fsync'd before the call returns, so a crash loses at most the record being written. Existing lines
are never rewritten and sessions are never deleted.

One process at a time may hold a session: ``open``/``create`` take a non-blocking ``fcntl.flock`` on a
sidecar ``<id>.lock`` file holding the owner's pid. The kernel drops the lock when the process dies, so a
crash never leaves a stale lock. Lock files stay on disk on purpose: deleting them would let two
processes each lock a different inode of the "same" lock file.
"""

from __future__ import annotations

import builtins
import fcntl
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from catbuddy import __version__
from catbuddy.messages import strip_runtime_block
from catbuddy.redact import redact
from catbuddy.session.records import (
    COMPACTION_KEYS,
    EVENT_ENVELOPE,
    MESSAGE,
    MESSAGE_ENVELOPE,
    CompactionRecord,
    CompactionUndoRecord,
    EventRecord,
    LoadResult,
    MessageRecord,
    MetaRecord,
    SessionError,
    read_session_file,
)

SESSION_SUFFIX = ".jsonl"
LOCK_SUFFIX = ".lock"
MESSAGE_ID_PREFIX = "m"
COMPACTION_ID_PREFIX = "c"
ID_DIGITS = 6
SESSION_ID_RANDOM_BYTES = 3  # six hex characters after the timestamp

_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Record lines written by catbuddy always start with the type key, so listing can count messages by
# prefix without parsing JSON (a quote inside a string value is always escaped, so this cannot match
# inside content). The spaced form covers files written by json.dumps defaults.
_MESSAGE_LINE_PREFIXES = (b'{"type":"message"', b'{"type": "message"')
_USER_ROLE_KEYS = (b'"role":"user"', b'"role": "user"')


class SessionLocked(SessionError):
    def __init__(self, session_id: str, pid: int | None) -> None:
        self.session_id, self.pid = session_id, pid
        if pid == os.getpid():
            text = f"session {session_id} is already open in this catbuddy process (pid {pid})"
        else:
            who = f"pid {pid}" if pid else "pid unknown"
            text = (
                f"session {session_id} is open in another catbuddy process ({who}); "
                "close it or use --resume with another id"
            )
        super().__init__(text)


class SessionNotFound(SessionError):
    pass


class SessionClosed(SessionError):
    pass


@dataclass(frozen=True)
class SessionInfo:
    id: str
    path: Path
    created_at: datetime | None  # from the meta line (UTC); None if the file has no readable meta
    last_activity: datetime  # the file's mtime (UTC): every append changes it
    message_count: int
    first_user_message: str  # without catbuddy's trailing "[runtime: …]" block
    size_bytes: int
    model: str
    work_root: str


def now_ts() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_session_id(now: datetime | None = None) -> str:
    """Sortable by creation time (UTC), unique thanks to a random suffix: ``20261202-102040-ab12cd``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(SESSION_ID_RANDOM_BYTES)}"


class Session:
    """An open, locked session. Use ``SessionStore.create`` or ``SessionStore.open`` to get one."""

    def __init__(
        self,
        path: Path,
        meta: MetaRecord,
        lock_fd: int,
        next_message: int,
        next_compaction: int,
        loaded: LoadResult | None = None,
        secrets: tuple[str, ...] = (),
    ):
        self.id = path.name[: -len(SESSION_SUFFIX)]
        self.path = path
        self.meta = meta
        self._lock_fd: int | None = lock_fd
        self._file: BinaryIO | None = path.open("ab")
        self._next_message = next_message
        self._next_compaction = next_compaction
        self._write_failed = False
        self._unread_load = loaded  # what `open` read; `load` hands it out once instead of re-reading
        self._secrets = secrets  # literal keys to scrub from event records

    @property
    def closed(self) -> bool:
        return self._file is None

    def append_message(self, message: Mapping[str, Any]) -> str:
        """Append an OpenAI chat message exactly as given; returns its new id (``m000001``, …)."""
        if not isinstance(message.get("role"), str):
            raise ValueError(f"a message needs a string 'role', got {message.get('role')!r}")
        _check_reserved("message", message, MESSAGE_ENVELOPE)
        record = MessageRecord(id=self._new_id(MESSAGE_ID_PREFIX), ts=now_ts(), message=dict(message))
        self._next_message += 1  # even if the write fails: it may have reached the disk
        self._write(record.to_json())
        return record.id

    def append_compaction(self, summary: str, folded_through: str, **extra: Any) -> str:
        """Record a summary that replaces every message up to and including ``folded_through``."""
        if not isinstance(summary, str) or not isinstance(folded_through, str) or not folded_through:
            raise ValueError("a compaction needs a summary string and the id of the last folded message")
        _check_reserved("compaction", extra, COMPACTION_KEYS)
        record = CompactionRecord(
            id=self._new_id(COMPACTION_ID_PREFIX),
            ts=now_ts(),
            summary=summary,
            folded_through=folded_through,
            extra=extra,
        )
        self._next_compaction += 1  # even if the write fails: it may have reached the disk
        self._write(record.to_json())
        return record.id

    def append_compaction_undo(self, compaction_id: str) -> None:
        """Record that the compaction ``compaction_id`` no longer counts (``/compact undo``)."""
        if not isinstance(compaction_id, str) or not compaction_id:
            raise ValueError("an undo needs the id of the compaction it voids")
        self._write(CompactionUndoRecord(ts=now_ts(), voids=compaction_id).to_json())

    def append_event(self, kind: str, **data: Any) -> None:
        """Record a stop, error, governance report, approval decision, usage, …; secrets are scrubbed."""
        if not isinstance(kind, str) or not kind:
            raise ValueError("an event needs a non-empty kind")
        _check_reserved("event", data, EVENT_ENVELOPE)
        self._write(EventRecord(ts=now_ts(), kind=kind, data=redact(data, self._secrets)).to_json())

    def load(self) -> LoadResult:
        """Everything in the file now. Right after ``open`` (nothing appended yet; the lock keeps other
        writers out) this is what ``open`` already read, so resuming reads the file once."""
        loaded, self._unread_load = self._unread_load, None
        return loaded if loaded is not None else read_session_file(self.path)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._lock_fd is not None:
            _release_lock(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {'closed' if self.closed else 'open'})"

    def _new_id(self, prefix: str) -> str:
        number = self._next_message if prefix == MESSAGE_ID_PREFIX else self._next_compaction
        return f"{prefix}{number:0{ID_DIGITS}d}"

    def _write(self, obj: dict[str, Any]) -> None:
        if self._file is None:
            raise SessionClosed(f"session {self.id} is closed; open it again to append")
        line = _encode_line(obj)
        self._unread_load = None
        if self._write_failed:
            line = b"\n" + line  # a failed write (disk full, …) may have left half a line behind
        try:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError:
            self._write_failed = True
            raise
        self._write_failed = False


class SessionStore:
    def __init__(self, sessions_dir: Path, secrets: Iterable[str] = ()) -> None:
        self.sessions_dir = Path(sessions_dir)
        self.secrets = tuple(s for s in secrets if s)  # scrubbed from every event record written

    def path_for(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}{SESSION_SUFFIX}"

    def create(self, work_root: Path | str, model: str) -> Session:
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        while True:
            session_id = new_session_id()
            path = self.path_for(session_id)
            try:
                handle = path.open("xb")  # exclusive: two processes can never pick the same file
            except FileExistsError:
                continue
            break
        with handle:
            lock_fd = _acquire_lock(self._lock_path(session_id), session_id)
            meta = MetaRecord(
                session_id=session_id,
                created_at=now_ts(),
                work_root=str(Path(work_root).expanduser().resolve()),
                model=model,
                catbuddy_version=__version__,
            )
            handle.write(_encode_line(meta.to_json()))
            handle.flush()
            os.fsync(handle.fileno())
        return Session(path, meta, lock_fd, next_message=1, next_compaction=1, secrets=self.secrets)

    def find(self, session_id: str) -> Path:
        """The file of a session id (or a unique prefix of one), without taking its lock."""
        return self.path_for(self._resolve_id(session_id))

    def open(self, session_id: str) -> Session:
        """Open an existing session for appending; ``session_id`` may be a unique prefix of an id."""
        session_id = self._resolve_id(session_id)
        path = self.path_for(session_id)
        lock_fd = _acquire_lock(self._lock_path(session_id), session_id)
        try:
            loaded = read_session_file(path)
            _end_with_newline(path)
        except BaseException:
            _release_lock(lock_fd)
            raise
        meta = loaded.meta or MetaRecord(session_id=session_id)
        compactions = (r.id for r in loaded.records if isinstance(r, CompactionRecord))
        return Session(
            path,
            meta,
            lock_fd,
            next_message=_highest_number((m.id for m in loaded.messages), MESSAGE_ID_PREFIX) + 1,
            next_compaction=_highest_number(compactions, COMPACTION_ID_PREFIX) + 1,
            loaded=loaded,
            secrets=self.secrets,
        )

    def latest(self, work_root: Path | str | None = None) -> SessionInfo | None:
        """The most recently active session (of ``work_root`` if given), without locking anything."""
        wanted = str(Path(work_root).expanduser().resolve()) if work_root is not None else None
        for path, stat in sorted(self._session_files(), key=lambda ps: ps[1].st_mtime_ns, reverse=True):
            info = _scan(path, stat)
            if info is not None and (wanted is None or info.work_root == wanted):
                return info
        return None

    def list(self) -> builtins.list[SessionInfo]:
        """Every session, most recently active first. Takes no locks; reads each file once, no JSON
        parsing except the meta line and the lines up to the first user message."""
        infos = [info for path, stat in self._session_files() if (info := _scan(path, stat)) is not None]
        infos.sort(key=lambda info: (info.last_activity, info.id), reverse=True)
        return infos

    def _lock_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}{LOCK_SUFFIX}"

    def _session_files(self) -> builtins.list[tuple[Path, os.stat_result]]:
        if not self.sessions_dir.is_dir():
            return []
        files = []
        for entry in os.scandir(self.sessions_dir):
            try:
                if entry.name.endswith(SESSION_SUFFIX) and entry.is_file():
                    files.append((Path(entry.path), entry.stat()))
            except OSError:
                continue  # vanished while listing

        return files

    def _resolve_id(self, session_id: str) -> str:
        how = f"run `catbuddy sessions` (or /sessions) to see the sessions of this directory ({self.sessions_dir})"
        if not _SESSION_ID_RE.match(session_id or ""):
            raise SessionNotFound(f"{session_id!r} is not a session id; {how}")
        if self.path_for(session_id).is_file():
            return session_id
        matches = sorted(p.name[: -len(SESSION_SUFFIX)] for p, _ in self._session_files())
        matches = [m for m in matches if m.startswith(session_id)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise SessionNotFound(
                f"{session_id!r} matches several sessions ({', '.join(matches)}); give more of the id"
            )
        raise SessionNotFound(f"no session {session_id!r}; {how}")


def _check_reserved(what: str, data: Mapping[str, Any], reserved: frozenset[str]) -> None:
    clash = sorted(set(data) & reserved)
    if clash:
        raise ValueError(
            f"a {what} may not carry the record field(s) {', '.join(clash)}: they are set by the store"
        )


def _encode_line(obj: dict[str, Any]) -> bytes:
    """One compact JSON line. Serialised fully before anything is written, so a bad value writes nothing."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (e.g. tool output decoded with surrogateescape) cannot be UTF-8; escaped
        # JSON keeps them, so the record still loads back exactly.
        return (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record is not JSON-serialisable: {exc}") from None


def _acquire_lock(lock_path: Path, session_id: str) -> int:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by child processes
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        raise SessionLocked(session_id, int(holder) if holder.isdigit() else None) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _release_lock(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)  # no pid left behind to mislead a reader
    finally:
        os.close(fd)  # closing the descriptor drops the flock


def _end_with_newline(path: Path) -> None:
    """After a torn last line, start the next record on a fresh line; the torn line stays as it is."""
    with path.open("rb+") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) != b"\n":
            handle.write(b"\n")
            handle.flush()
            os.fsync(handle.fileno())


def _highest_number(ids: Iterable[str], prefix: str) -> int:
    """The highest ``<prefix><digits>`` id found, so new ids continue after it (0 if none)."""
    numbers = [int(i[len(prefix) :]) for i in ids if i.startswith(prefix) and i[len(prefix) :].isdigit()]
    return max(numbers, default=0)


def _scan(path: Path, stat: os.stat_result) -> SessionInfo | None:
    """Summarise one session file without locking it and without parsing every line."""
    try:
        data = path.read_bytes()
    except OSError:
        return None  # vanished or unreadable while listing: not worth failing the whole list
    first_break = data.find(b"\n")
    meta = _parse_meta(data if first_break < 0 else data[:first_break])
    return SessionInfo(
        id=path.name[: -len(SESSION_SUFFIX)],
        path=path,
        created_at=_parse_time(meta.created_at) if meta else None,
        last_activity=datetime.fromtimestamp(stat.st_mtime, UTC),
        message_count=_count_messages(data),
        first_user_message=_first_user_text(data),
        size_bytes=stat.st_size,
        model=meta.model if meta else "",
        work_root=meta.work_root if meta else "",
    )


def _count_messages(data: bytes) -> int:
    """Message lines, counted by prefix in C; a torn line (no closing brace) never counts."""
    breaks = data.count(b"\n")
    joined = data.count(b'}\n{"type"')  # a whole record followed by the start of the next one
    if data.endswith((b"}\n", b"}")) and joined == breaks - data.endswith(b"\n"):
        # The usual case: every line is a whole record, so counting prefixes is exact.
        return sum(data.count(b"\n" + prefix) + data.startswith(prefix) for prefix in _MESSAGE_LINE_PREFIXES)
    # A crash (or an editor) left a torn or odd line somewhere: look at each line.
    return sum(
        1
        for line in data.split(b"\n")
        if line.startswith(_MESSAGE_LINE_PREFIXES) and line.rstrip().endswith(b"}")
    )


def _first_user_text(data: bytes) -> str:
    """The first user message's text. The role key can only appear unescaped as a real key (inside a
    JSON string its quotes are escaped), so searching for it jumps straight to the candidate lines."""
    start = 0
    while True:
        hit = -1
        for needle in _USER_ROLE_KEYS:
            found = data.find(needle, start, hit if hit >= 0 else len(data))
            hit = found if found >= 0 else hit
        if hit < 0:
            return ""
        line_start = data.rfind(b"\n", 0, hit) + 1
        line_end = data.find(b"\n", hit)
        line_end = len(data) if line_end < 0 else line_end
        text = _user_text(data[line_start:line_end])
        if text is not None:
            return text
        start = line_end


def _parse_meta(line: bytes) -> MetaRecord | None:
    try:
        obj = json.loads(line.decode("utf-8"))
        return MetaRecord.from_json(obj) if isinstance(obj, dict) and obj.get("type") == "meta" else None
    except ValueError:
        return None


def _user_text(line: bytes) -> str | None:
    try:
        obj = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(obj, dict) or obj.get("type", MESSAGE) != MESSAGE or obj.get("role") != "user":
        return None
    content = obj.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = " ".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return strip_runtime_block(content).strip() if isinstance(content, str) else ""


def _parse_time(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
