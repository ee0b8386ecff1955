"""File access for the tools: regular files only, bounded in bytes, never blocking on a special file.

A FIFO, a device or a socket is refused before anything is read or written: opening a FIFO blocks
until someone is at the other end, a device can stream forever. Files are opened with ``O_NONBLOCK``
and checked with ``fstat`` on the open descriptor, so a path swapped for a FIFO after the check is
refused too. Reads are bounded in bytes before anything is decoded: a 1 GB file without a newline
costs a few kilobytes of memory, not gigabytes. Everything here blocks: callers run it in a thread.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from catbuddy.tools.base import ToolError

READ_CHUNK = 1024 * 1024  # bytes per read when skipping or counting
FILE_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def kind_of(mode: int) -> str:
    return FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")


def refuse_special(shown: str, mode: int, verb: str) -> ToolError:
    return ToolError(
        f"{shown} is {kind_of(mode)}, not a regular file; catbuddy does not {verb} it "
        "(it could block or never end)."
    )


def check_regular(path: Path, shown: str, verb: str) -> os.stat_result | None:
    """The file's stat if it is a regular file, None if nothing is there; refuses anything else."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # a NUL byte, a symlink loop, a permission problem
        raise ToolError(f"{shown}: cannot use this path ({_why(exc)}).") from None
    if stat.S_ISDIR(info.st_mode):
        return info
    if not stat.S_ISREG(info.st_mode):
        raise refuse_special(shown, info.st_mode, verb)
    return info


def open_regular(path: Path, shown: str) -> BinaryIO:
    """Open a regular file for reading; anything else is refused without blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:
        raise ToolError(f"{shown}: cannot open it ({_why(exc)}).") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse_special(shown, mode, "read")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, shown: str, limit: int) -> bytes:
    """A whole regular file of at most ``limit`` bytes (larger ones are refused, unread)."""
    with open_regular(path, shown) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise ToolError(
                f"{shown} is {size:,} bytes, over the {limit:,}-byte limit for this tool; "
                "use exec (sed, python) for files this large."
            )
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew while we read it
        raise ToolError(f"{shown} grew past the {limit:,}-byte limit while it was read.")
    return data


def write_bytes(path: Path, shown: str, data: bytes) -> None:
    """Replace a regular file's content (creating it); never opens a FIFO, device or socket."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:  # ENXIO: a FIFO nobody reads; EISDIR …
        info = None
        try:
            info = path.stat()
        except OSError:
            pass
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise refuse_special(shown, info.st_mode, "write") from None
        raise ToolError(f"{shown}: cannot write it ({_why(exc)}).") from None
    except ValueError as exc:
        raise ToolError(f"{shown}: cannot write it ({_why(exc)}).") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise refuse_special(shown, mode, "write")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise ToolError(f"{shown}: writing failed ({_why(exc)}).") from None
    finally:
        os.close(fd)


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc)


# --- bounded lines --------------------------------------------------------------------------------


@dataclass
class Line:
    number: int  # 1-based
    text: str  # decoded (U+FFFD for bytes that are not UTF-8), without its line break
    cut_bytes: int = 0  # bytes of this line beyond what was read (a very long line)
    replaced: bool = False  # it held bytes that are not UTF-8


LEGACY_ENCODINGS = {"cp1252": "Windows-1252 (latin-1 with its extras)", "latin-1": "latin-1 (ISO-8859-1)"}


def detect_encoding(sample: bytes) -> str:
    """``"utf-8"``, or the 8-bit encoding a text that is not UTF-8 reads as: Windows-1252 when every
    byte of ``sample`` (the file's head) is defined there, else latin-1, which decodes any byte."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)  # a cut character is fine
        return "utf-8"
    except UnicodeDecodeError:
        pass
    try:
        sample.decode("cp1252")
        return "cp1252"
    except UnicodeDecodeError:
        return "latin-1"


def iter_lines(handle: BinaryIO, max_line_bytes: int, encoding: str = "utf-8") -> Iterator[Line]:
    """The lines of an open file, each read up to ``max_line_bytes`` (the rest is skipped unread into
    memory), decoded as UTF-8 with U+FFFD for anything else (or in ``encoding``, one of
    ``LEGACY_ENCODINGS``, for a file that is not UTF-8). A leading BOM is dropped."""
    number = 0
    while True:
        raw = handle.readline(max_line_bytes)
        if not raw:
            return
        number += 1
        cut = 0
        if not raw.endswith(b"\n") and len(raw) >= max_line_bytes:
            cut = _skip_rest_of_line(handle)
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        body = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
        if encoding == "utf-8":
            text, replaced = _decode_head(body, complete=not cut)
        else:
            text, replaced = body.decode(encoding, "replace"), False
        yield Line(number, text, cut, replaced)


def _skip_rest_of_line(handle: BinaryIO) -> int:
    skipped = 0
    while True:
        chunk = handle.readline(READ_CHUNK)
        if not chunk:
            return skipped
        if chunk.endswith(b"\n"):
            return skipped + len(chunk.rstrip(b"\r\n"))
        skipped += len(chunk)


def _decode_head(data: bytes, *, complete: bool) -> tuple[str, bool]:
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    # A line cut short may end inside a character: hold those bytes back rather than mark them.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data, final=complete)
    return text, "\ufffd" in text


def count_remaining_lines(handle: BinaryIO) -> int:
    """Lines left from the current position (the start of a line) to the end, counted in chunks."""
    count = 0
    last = b"\n"
    while True:
        chunk = handle.read(READ_CHUNK)
        if not chunk:
            break
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (1 if last and last != b"\n" else 0)
