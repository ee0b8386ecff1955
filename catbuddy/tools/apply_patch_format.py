"""Codex's patch format: parsing it, and finding each hunk's lines in a file.

The format (the one GPT-4.1, GPT-5 and the Codex models are trained on)::

    *** Begin Patch
    *** Add File: path          then "+" lines: the new file
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ class or def line        (optional context that narrows where the next lines are)
     context line / -removed line / +added line
    *** End of File             (optional: the hunk's lines end the file)
    *** End Patch

Parsing is as lenient as Codex's: markers may carry surrounding whitespace, a heredoc wrapper
(``<<'EOF'`` … ``EOF``) is taken off, the first hunk of an update may start without ``@@``. Finding lines
tries, like Codex's ``seek_sequence``: exact, then ignoring trailing whitespace, then surrounding
whitespace, then with Unicode dashes, quotes and spaces read as their ASCII forms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from catbuddy.errors import CatbuddyError

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
HEREDOC_STARTS = ("<<EOF", "<<'EOF'", '<<"EOF"')
PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
    }
)


class PatchError(CatbuddyError):
    """The patch is not in the format, or a hunk does not fit its file."""


@dataclass
class Chunk:
    context: str | None  # the "@@ " line's text: the lines follow it
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    end_of_file: bool = False


@dataclass
class FileOp:
    kind: str  # "add", "delete" or "update"
    path: str
    contents: str = ""  # add
    move_to: str | None = None  # update
    chunks: list[Chunk] = field(default_factory=list)  # update


def parse_patch(text: str) -> list[FileOp]:
    lines = text.strip().splitlines()
    if len(lines) >= 4 and lines[0].strip() in HEREDOC_STARTS and lines[-1].strip().endswith("EOF"):
        lines = lines[1:-1]
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError("the first line of the patch must be '*** Begin Patch'.")
    if lines[-1].strip() != END:
        raise PatchError("the last line of the patch must be '*** End Patch'.")
    body = lines[1:-1]
    ops: list[FileOp] = []
    at = 0
    while at < len(body):
        op, used = _parse_op(body, at)
        ops.append(op)
        at += used
    if not ops:
        raise PatchError("the patch holds no file operations; nothing to apply.")
    return ops


def _parse_op(lines: list[str], at: int) -> tuple[FileOp, int]:
    header = lines[at].strip()
    number = at + 2  # the patch's own line number (1: Begin Patch)
    if header.startswith(ADD):
        added = []
        n = at + 1
        while n < len(lines) and lines[n].startswith("+"):
            added.append(lines[n][1:])
            n += 1
        return FileOp(
            "add", _path(header[len(ADD) :], number), contents="".join(a + "\n" for a in added)
        ), n - at
    if header.startswith(DELETE):
        return FileOp("delete", _path(header[len(DELETE) :], number)), 1
    if header.startswith(UPDATE):
        op = FileOp("update", _path(header[len(UPDATE) :], number))
        n = at + 1
        if n < len(lines) and lines[n].strip().startswith(MOVE):
            op.move_to = _path(lines[n].strip()[len(MOVE) :], n + 2)
            n += 1
        while n < len(lines):
            if not lines[n].strip():
                n += 1
                continue
            if lines[n].startswith("*"):
                break
            chunk, used = _parse_chunk(lines, n, first=not op.chunks)
            op.chunks.append(chunk)
            n += used
        if not op.chunks:
            raise PatchError(f"line {number}: the update of '{op.path}' has no hunks.")
        return op, n - at
    raise PatchError(
        f"line {number}: '{header}' is not a file operation. Each starts with '*** Add File: path', "
        "'*** Delete File: path' or '*** Update File: path'."
    )


def _path(raw: str, number: int) -> str:
    path = raw.strip()
    if not path:
        raise PatchError(f"line {number}: a file operation without a path.")
    return path


def _parse_chunk(lines: list[str], at: int, *, first: bool) -> tuple[Chunk, int]:
    head = lines[at]
    n = at
    if head.strip() == "@@":
        chunk, n = Chunk(None), n + 1
    elif head.startswith("@@ "):
        chunk, n = Chunk(head[3:]), n + 1
    elif first:
        chunk = Chunk(None)
    else:
        raise PatchError(f"line {at + 2}: expected a hunk starting with '@@', got '{head}'.")
    body_start = n
    while n < len(lines):
        line = lines[n]
        if line.strip() == END_OF_FILE:
            if n == body_start:
                raise PatchError(f"line {n + 2}: a hunk without lines before '*** End of File'.")
            chunk.end_of_file = True
            n += 1
            break
        if line == "":
            chunk.old.append("")
            chunk.new.append("")
        elif line[0] == " ":
            chunk.old.append(line[1:])
            chunk.new.append(line[1:])
        elif line[0] == "+":
            chunk.new.append(line[1:])
        elif line[0] == "-":
            chunk.old.append(line[1:])
        elif n == body_start:
            raise PatchError(
                f"line {n + 2}: '{line}' in a hunk: every line starts with ' ' (context), '+' (added) "
                "or '-' (removed)."
            )
        else:
            break  # the next hunk or file operation
        n += 1
    if n == body_start:
        raise PatchError(f"line {at + 2}: a hunk without lines.")
    return chunk, n - at


# --- finding a hunk's lines ---------------------------------------------------------------------------

MATCHERS: list[Callable[[str], str]] = [
    lambda s: s,
    str.rstrip,
    str.strip,
    lambda s: s.strip().translate(PUNCTUATION),
]


def seek(lines: list[str], pattern: list[str], start: int, end_of_file: bool) -> int | None:
    """Where ``pattern`` starts in ``lines`` at or after ``start``, trying ever more tolerant comparisons;
    with ``end_of_file`` the end of the file is tried first."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    begin = last if end_of_file else start
    for key in MATCHERS:
        want = [key(p) for p in pattern]
        for i in range(begin, last + 1):
            if all(key(lines[i + k]) == want[k] for k in range(len(pattern))):
                return i
    if end_of_file and begin != start:
        return seek(lines, pattern, start, False)
    return None


@dataclass
class HunkMiss:
    """A hunk that does not fit: which one, and what it looked for."""

    index: int  # 1-based
    wanted: list[str]
    context: str | None
    missing_context: bool


def apply_chunks(text: str, chunks: list[Chunk]) -> str:
    """The file's new text; raises HunkMiss-carrying PatchError when a hunk's lines are not there.
    Like Codex, the result ends with a newline."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    at = 0
    for index, chunk in enumerate(chunks, 1):
        if chunk.context is not None:
            found = seek(lines, [chunk.context], at, False)
            if found is None:
                raise MissError(HunkMiss(index, [chunk.context], chunk.context, True))
            at = found + 1
        if not chunk.old:
            replacements.append((len(lines), 0, chunk.new))  # a pure addition goes at the end
            continue
        old, new = chunk.old, chunk.new
        found = seek(lines, old, at, chunk.end_of_file)
        if found is None and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek(lines, old, at, chunk.end_of_file)
        if found is None:
            raise MissError(HunkMiss(index, chunk.old, chunk.context, False))
        replacements.append((found, len(old), new))
        at = found + len(old)
    for start, size, new in sorted(replacements, key=lambda r: r[0], reverse=True):
        lines[start : start + size] = new
    return "\n".join(lines) + "\n"


class MissError(PatchError):
    def __init__(self, miss: HunkMiss) -> None:
        super().__init__(f"hunk {miss.index} does not fit")
        self.miss = miss
