"""Text helpers every layer shares: cutting text to a size (always saying what was cut) and diffs.

One truncator for tool output, governance and the summarizer's input, so a cut looks the same
wherever the model meets it (docs/architecture.md §9).
"""

from __future__ import annotations

import difflib

CUT_MARKER = "[... {cut:,} characters cut{why} ...]"
MARKER_ROOM = 40  # characters a marker takes, a little generously


def cut_marker(count: int, why: str = "") -> str:
    """``[... 1,234 characters cut ...]``; ``why`` (e.g. " to fit the context window") follows "cut"."""
    return CUT_MARKER.format(cut=count, why=why)


def truncate_middle(text: str, keep_chars: int, *, why: str = "", already_cut: int = 0) -> str:
    """Keep the head and the tail of ``text`` (``keep_chars`` characters together) and mark the cut.

    ``already_cut`` counts characters dropped before ``text`` reached us, so the marker reports the
    whole loss even when ``text`` itself fits."""
    keep_chars = max(keep_chars, 0)
    if keep_chars >= len(text) and not already_cut:
        return text
    if keep_chars >= len(text):
        half = len(text) // 2
        return f"{text[:half]}\n{cut_marker(already_cut, why)}\n{text[half:]}"
    head = (keep_chars + 1) // 2
    tail = keep_chars - head
    cut = len(text) - keep_chars + already_cut
    return f"{text[:head]}\n{cut_marker(cut, why)}\n{text[len(text) - tail :] if tail else ''}"


def fit_middle(text: str, limit: int, *, why: str = "", already_cut: int = 0) -> str:
    """``truncate_middle`` sized so the result, marker included, stays within ``limit`` characters."""
    if len(text) <= limit and not already_cut:
        return text
    room = MARKER_ROOM + len(why)
    return truncate_middle(text, min(len(text), limit - room), why=why, already_cut=already_cut)


def truncate_head(text: str, limit: int, note: str = "") -> str:
    """Keep the first ``limit`` characters (the start matters more, e.g. a web page)."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    tail = f" {note}" if note else ""
    return f"{text[:limit]}\n[... {cut:,} more characters not shown.{tail}]"


def cut_line(line: str, limit: int) -> str:
    """One over-long line (minified code, data) must not eat the whole budget."""
    if len(line) <= limit:
        return line
    return f"{line[:limit]} [... line cut, {len(line) - limit:,} more characters]"


def truncate_lines(text: str, max_lines: int, note: str = "") -> str:
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    rest = len(lines) - max_lines
    tail = f" {note}" if note else ""
    return "\n".join(lines[:max_lines]) + f"\n[... {rest:,} more lines not shown.{tail}]"


def unified_diff(before: str, after: str, name: str) -> str:
    """A git-style unified diff of two texts (``a/name`` → ``b/name``); '' when they are equal."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def line_count(text: str) -> int:
    """Lines of ``text``, a last line without a newline included."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def diff_stat(diff: str) -> tuple[int, int]:
    """Lines added and removed by a ``unified_diff`` (its two header lines are not counted)."""
    added = removed = 0
    for line in diff.splitlines()[2:]:
        if line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    return added, removed


def line_delta(before: str, after: str) -> tuple[int, int]:
    """Lines added and removed between two texts (what `git diff --stat` counts)."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


# --- valid text -------------------------------------------------------------------------------------

REPLACEMENT = "\ufffd"  # U+FFFD, the visible mark for text that could not be decoded


def valid_text(text: str) -> str:
    """``text`` as valid Unicode that encodes to UTF-8: lone surrogates become U+FFFD.

    Surrogates reach us from argv and file names (Python's surrogateescape), from JSON escapes split
    across stream chunks, and from foreign session files. A pair that was merely split in two is joined
    back; anything else is replaced visibly. Everything that enters the history passes through here
    (or ``decode_text``), so no later encode can fail."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def decode_text(data: bytes) -> str:
    """Bytes as text: UTF-8, every undecodable byte shown as U+FFFD (never an error)."""
    return data.decode("utf-8", "replace")
