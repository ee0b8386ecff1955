"""Shared helpers that keep tool output inside its caps, always saying what was cut."""

from __future__ import annotations

from collections import deque

# Bytes held in memory while a command runs; beyond this the middle is dropped as it streams.
CAPTURE_LIMIT_BYTES = 4 * 1024 * 1024


def cut_marker(count: int, unit: str = "characters") -> str:
    return f"[... {count:,} {unit} cut ...]"


def truncate_middle(text: str, limit: int, *, extra_cut: int = 0) -> str:
    """Keep the head and the tail of ``text`` within ``limit`` characters, marking the cut.

    ``extra_cut`` counts characters already dropped before ``text`` reached us (so the marker
    reports the whole loss).
    """
    if len(text) <= limit and not extra_cut:
        return text
    if len(text) <= limit:
        half = len(text) // 2
        return f"{text[:half]}\n{cut_marker(extra_cut)}\n{text[half:]}"
    marker_room = 40
    keep = max(limit - marker_room, 0)
    head = keep // 2
    tail = keep - head
    cut = len(text) - head - tail + extra_cut
    return f"{text[:head]}\n{cut_marker(cut)}\n{text[len(text) - tail :] if tail else ''}"


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


class HeadTailBuffer:
    """Collects a byte stream of any length, keeping its head and tail and counting what fell out."""

    def __init__(self, limit: int = CAPTURE_LIMIT_BYTES) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        if len(self.head) < self.head_limit:
            room = self.head_limit - len(self.head)
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size > self.tail_limit:
            excess = self.tail_size - self.tail_limit
            first = self.tail[0]
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_size -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_size -= excess
                self.dropped += excess

    def text(self, limit: int) -> str:
        """The captured output as text, cut in the middle to ``limit`` characters."""
        head = bytes(self.head).decode("utf-8", errors="replace")
        tail = b"".join(self.tail).decode("utf-8", errors="replace")
        if not self.dropped:
            return truncate_middle(head + tail, limit)
        # Bytes dropped while streaming are counted as characters: exact for ASCII, close otherwise.
        return truncate_middle(head + tail, limit, extra_cut=self.dropped)
