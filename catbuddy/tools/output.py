"""Capturing a command's output of any length, head and tail kept (the cutting is ``catbuddy.text``'s)."""

from __future__ import annotations

from collections import deque

from catbuddy.text import fit_middle

# Bytes held in memory while a command runs; beyond this the middle is dropped as it streams.
CAPTURE_LIMIT_BYTES = 4 * 1024 * 1024


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
            return fit_middle(head + tail, limit)
        # Bytes dropped while streaming are counted as characters: exact for ASCII, close otherwise.
        return fit_middle(head + tail, limit, already_cut=self.dropped)
