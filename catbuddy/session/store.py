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
import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from catbuddy import __version__
from catbuddy.errors import EXIT_FAILED
from catbuddy.messages import valid_json
from catbuddy.session.records import (
    COMPACTION_KEYS,
    EVENT_ENVELOPE,
    MESSAGE_ENVELOPE,
    CompactionRecord,
    CompactionUndoRecord,
    EventRecord,
    LoadResult,
    MessageRecord,
    MetaRecord,
    SessionError,
    read_session_file,
    rebuild_meta,
)
from catbuddy.session.scan import META_REBUILT, SESSION_SUFFIX, SessionInfo, scan

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
MESSAGE_ID_PREFIX = "m"
COMPACTION_ID_PREFIX = "c"
ID_DIGITS = 6
SESSION_ID_RANDOM_BYTES = 3  # six hex characters after the timestamp

_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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


class SessionWriteError(SessionError, OSError):
    """A record could not be written (disk full, folder not writable …): what happened, where, what to do.
    The lines already there are intact; the next record starts on a line of its own."""

    exit_code = EXIT_FAILED

    def __init__(self, path: Path, cause: OSError, *, folder: Path | None = None) -> None:
        reason = cause.strerror or str(cause)
        folder = path.parent if folder is None else folder
        if cause.errno in (errno.ENOSPC, errno.EDQUOT):
            todo = f"The disk holding {folder} is full: free some space"
        elif cause.errno == errno.EFBIG:
            todo = (
                "The file has reached the largest size this system allows (`ulimit -f`): start a new session"
            )
        elif cause.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            todo = f"Make {folder} writable (or set CATBUDDY_HOME to a folder that is)"
        else:
            todo = f"Check the disk holding {folder}"
        super().__init__(
            f"The session could not be saved: writing {path} failed ({reason}).",
            f"{todo}, then go on: the session keeps everything up to its last saved record.",
        )
        self.errno, self.strerror, self.filename = cause.errno, cause.strerror, str(path)


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
        self._grouping = 0  # inside group(): records are flushed but fsync'd once, when the group ends
        self._unsynced = False

    @property
    def closed(self) -> bool:
        return self._file is None

    @property
    def next_message_id(self) -> str:
        """The id the next appended message gets (a turn's checkpoint names its user message by it)."""
        return self._new_id(MESSAGE_ID_PREFIX)

    def append_message(self, message: Mapping[str, Any], meta: Mapping[str, Any] | None = None) -> str:
        """Append an OpenAI chat message exactly as given; returns its new id (``m000001``, …). ``meta``
        (a tool message's ``ToolMeta``) is stored beside it in the record, not in the message.

        Text that cannot be UTF-8 (lone surrogates) is stored as U+FFFD, and a ``dict`` message is
        repaired in place the same way, so the history in memory always equals the file."""
        if not isinstance(message.get("role"), str):
            raise ValueError(f"a message needs a string 'role', got {message.get('role')!r}")
        _check_reserved("message", message, MESSAGE_ENVELOPE)
        record = MessageRecord(
            id=self._new_id(MESSAGE_ID_PREFIX),
            ts=now_ts(),
            message=dict(message),
            meta=dict(meta) if meta is not None else None,
        )
        self._next_message += 1  # even if the write fails: it may have reached the disk
        cleaned = self._write(record.to_json())
        if cleaned is not None and isinstance(message, dict):
            repaired = {k: v for k, v in cleaned.items() if k not in MESSAGE_ENVELOPE}
            message.clear()
            message.update(repaired)
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
        """Record a stop, error, governance report, approval decision, usage, … as given: what is recorded
        comes from the event bus, which has scrubbed it of secrets (agent/bus.py)."""
        if not isinstance(kind, str) or not kind:
            raise ValueError("an event needs a non-empty kind")
        _check_reserved("event", data, EVENT_ENVELOPE)
        self._write(EventRecord(ts=now_ts(), kind=kind, data=data).to_json())

    @contextlib.contextmanager
    def group(self) -> Iterator[None]:
        """Records written inside are one durable step: each is flushed as it is written, and the file
        is fsync'd once when the group ends (also when it ends with an exception)."""
        self._grouping += 1
        try:
            yield
        finally:
            self._grouping -= 1
            if not self._grouping and self._unsynced and self._file is not None:
                self._unsynced = False
                try:
                    os.fsync(self._file.fileno())
                except OSError as exc:
                    raise SessionWriteError(self.path, exc) from exc

    def load(self) -> LoadResult:
        """Everything in the file now. Right after ``open`` (nothing appended yet; the lock keeps other
        writers out) this is what ``open`` already read, so resuming reads the file once."""
        loaded, self._unread_load = self._unread_load, None
        return loaded if loaded is not None else read_session_file(self.path)

    def close(self) -> None:
        file, self._file = self._file, None
        try:
            if file is not None:
                file.close()
        except OSError as exc:  # what a failed write left in the buffer fails again; it was reported then
            log.info("closing session %s: %s", self.id, exc)
        finally:
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

    def _write(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Append one record; returns the record as repaired when its text had to be, else None."""
        if self._file is None:
            raise SessionClosed(f"session {self.id} is closed; open it again to append")
        line, cleaned = _encode_line(obj)
        self._unread_load = None
        if self._write_failed:
            line = b"\n" + line  # a failed write (disk full, …) may have left half a line behind
        try:
            self._file.write(line)
            self._file.flush()
            if self._grouping:
                self._unsynced = True
            else:
                os.fsync(self._file.fileno())
        except OSError as exc:
            self._write_failed = True
            raise SessionWriteError(self.path, exc) from exc
        self._write_failed = False
        return cleaned


class SessionStore:
    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = Path(sessions_dir)

    def path_for(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}{SESSION_SUFFIX}"

    def create(self, work_root: Path | str, model: str) -> Session:
        try:
            self.sessions_dir.mkdir(parents=True, exist_ok=True)
            while True:
                session_id = new_session_id()
                path = self.path_for(session_id)
                try:
                    handle = path.open("xb")  # exclusive: two processes can never pick the same file
                except FileExistsError:
                    continue
                break
        except OSError as exc:
            raise SessionWriteError(self.sessions_dir, exc, folder=self.sessions_dir) from exc
        with handle:
            lock_fd = _acquire_lock(self._lock_path(session_id), session_id)
            meta = MetaRecord(
                session_id=session_id,
                created_at=now_ts(),
                work_root=str(Path(work_root).expanduser().resolve()),
                model=model,
                catbuddy_version=__version__,
            )
            try:
                handle.write(_encode_line(meta.to_json())[0])
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as exc:
                _release_lock(lock_fd)
                raise SessionWriteError(path, exc) from exc
        return Session(path, meta, lock_fd, next_message=1, next_compaction=1)

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
            if loaded.meta is None:
                loaded.meta = _repair_meta(path, session_id, loaded)
        except BaseException:
            _release_lock(lock_fd)
            raise
        meta = loaded.meta
        compactions = (r.id for r in loaded.records if isinstance(r, CompactionRecord))
        return Session(
            path,
            meta,
            lock_fd,
            next_message=_highest_number((m.id for m in loaded.messages), MESSAGE_ID_PREFIX) + 1,
            next_compaction=_highest_number(compactions, COMPACTION_ID_PREFIX) + 1,
            loaded=loaded,
        )

    def latest(self, work_root: Path | str | None = None) -> SessionInfo | None:
        """The most recently active session (of ``work_root`` if given), without locking anything."""
        wanted = str(Path(work_root).expanduser().resolve()) if work_root is not None else None
        for path, stat in sorted(self._session_files(), key=lambda ps: ps[1].st_mtime_ns, reverse=True):
            info = scan(path, stat)
            if info is not None and (wanted is None or info.work_root in (wanted, "")):
                return info
        return None

    def list(self) -> builtins.list[SessionInfo]:
        """Every session, most recently active first. Takes no locks; reads each file once, no JSON
        parsing except the meta line and the lines up to the first user message."""
        infos = [info for path, stat in self._session_files() if (info := scan(path, stat)) is not None]
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
        if session_id_problem(session_id):
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


def session_id_problem(session_id: Any) -> str:
    """Why ``session_id`` cannot name a session ("" when it can): ids are letters, digits, ``.``, ``_``
    and ``-``, starting with a letter or digit (so no path, no option, never empty)."""
    if not isinstance(session_id, str) or not session_id.strip():
        return "a session id cannot be empty"
    if not _SESSION_ID_RE.match(session_id):
        return "not a session id (ids look like 20261202-102040-ab12cd; a unique prefix will do)"
    return ""


def _check_reserved(what: str, data: Mapping[str, Any], reserved: frozenset[str]) -> None:
    clash = sorted(set(data) & reserved)
    if clash:
        raise ValueError(
            f"a {what} may not carry the record field(s) {', '.join(clash)}: they are set by the store"
        )


def _encode_line(obj: dict[str, Any]) -> tuple[bytes, dict[str, Any] | None]:
    """One compact JSON line, and the record as repaired if its text had to be (else None).

    Serialised fully before anything is written, so a bad value writes nothing. Lone surrogates (tool
    output decoded with surrogateescape, a split emoji) cannot be UTF-8: they are stored as U+FFFD."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"record is not JSON-serialisable: {exc}") from None
    try:
        return (text + "\n").encode("utf-8"), None
    except UnicodeEncodeError:
        cleaned = valid_json(obj)
        return (json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
            "utf-8"
        ), cleaned


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


def _repair_meta(path: Path, session_id: str, loaded: LoadResult) -> MetaRecord:
    """The meta line is lost: rebuild it, append it (the reader takes a meta record anywhere in the
    file, so the repair lasts), and report it. Appending never touches the lines already there."""
    meta = rebuild_meta(session_id, loaded.records)
    line, _ = _encode_line(meta.to_json())
    try:
        with path.open("ab") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        done = "; appended the rebuilt meta record"
    except OSError as exc:
        done = f"; could not append it ({exc.strerror or exc})"
    loaded.problems.insert(0, f"{path.name}: {META_REBUILT}{done}")
    return meta


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
