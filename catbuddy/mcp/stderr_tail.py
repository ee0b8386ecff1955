"""A stdio server's stderr, kept in a ring buffer instead of reaching the terminal (it would break the TUI).

The server writes into a pipe; the event loop reads the other end. End of file on that pipe means the
server process (and anything it spawned with the same stderr) is gone, which is how a death between
calls is noticed.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable
from typing import TextIO

MAX_TAIL_BYTES = 16_384  # kept per server
TAIL_LINES = 20  # shown in errors and `catbuddy mcp list`
EOF_GRACE = 0.5  # how long to wait for the last lines of a server that just died


class StderrTail(asyncio.Protocol):
    """Collects the last bytes a process wrote to stderr; ``writer`` is what the process gets."""

    def __init__(self, max_bytes: int = MAX_TAIL_BYTES, on_eof: Callable[[], None] | None = None) -> None:
        self._on_eof = on_eof
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._max = max_bytes
        self.eof = asyncio.Event()
        self._transport: asyncio.BaseTransport | None = None
        self._writer: TextIO | None = None

    async def open(self) -> TextIO:
        """Create the pipe and start reading it. Returns the writing end for the child's stderr."""
        read_fd, write_fd = os.pipe()
        loop = asyncio.get_running_loop()
        try:
            reader = os.fdopen(read_fd, "rb", buffering=0)
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            raise
        self._transport, _ = await loop.connect_read_pipe(lambda: self, reader)
        self._writer = os.fdopen(write_fd, "w")
        return self._writer

    def close_writer(self) -> None:
        """Drop our copy of the writing end once the child has its own, so EOF can arrive."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def close(self) -> None:
        self.close_writer()
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    async def wait_eof(self, timeout: float = EOF_GRACE) -> bool:
        try:
            await asyncio.wait_for(self.eof.wait(), timeout)
        except TimeoutError:
            return False
        return True

    # asyncio.Protocol ------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        while self._size > self._max and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())
        if self._size > self._max:  # one huge chunk
            self._chunks[0] = self._chunks[0][-self._max :]
            self._size = len(self._chunks[0])

    def eof_received(self) -> bool | None:
        self._reached_eof()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._reached_eof()

    def _reached_eof(self) -> None:
        if not self.eof.is_set():
            self.eof.set()
            if self._on_eof is not None:
                self._on_eof()

    # ------------------------------------------------------------------------------------------------

    def tail(self, lines: int = TAIL_LINES) -> str:
        text = b"".join(self._chunks).decode("utf-8", errors="replace")
        kept = [line.rstrip() for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])
