"""Small file helpers for memory: atomic replacement and tolerant reading."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a temp file beside ``path``, fsync it and rename it over ``path``: a reader (or a
    crash) sees the old file or the new one, never half of either."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read_or_none(path: Path) -> str | None:
    """The file's text, or None when it does not exist (undecodable bytes are replaced, not fatal)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return None


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """A short blocking ``flock`` on ``path`` (created if missing), for a check-then-write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
