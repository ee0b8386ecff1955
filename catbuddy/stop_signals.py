"""SIGTERM and SIGHUP stop catbuddy the way Ctrl+C does: the running turn is cancelled (its partial work
and a stop record are kept, its exec children killed), then catbuddy exits with 128 + the signal number.

A second signal while that cleanup runs exits at once; exec children still die, because the sandbox and
the exec supervisor ask the kernel to kill them when catbuddy goes (catbuddy.sandbox.launch).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@dataclass
class CaughtSignal:
    signum: int | None = None
    _handlers: list[int] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum if self.signum else 0


def install_stop_signals(
    on_signal: Callable[[int], None], signals: tuple[int, ...] = STOP_SIGNALS
) -> tuple[CaughtSignal, Callable[[], None]]:
    """Handle ``signals`` on the running event loop: the first calls ``on_signal(signum)``, a second one
    exits at once. Returns what was caught (so far) and a function that removes the handlers."""
    loop = asyncio.get_running_loop()
    caught = CaughtSignal()

    def handle(signum: int) -> None:
        if caught.signum is not None:
            os._exit(128 + signum)
        caught.signum = signum
        on_signal(signum)

    for signum in signals:
        try:
            loop.add_signal_handler(signum, handle, signum)
            caught._handlers.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no such signal
            continue

    def remove() -> None:
        for signum in caught._handlers:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(signum)

    return caught, remove


@contextlib.contextmanager
def stop_on_signals(
    on_signal: Callable[[int], None], signals: tuple[int, ...] = STOP_SIGNALS
) -> Iterator[CaughtSignal]:
    """``install_stop_signals`` for the duration of a block."""
    caught, remove = install_stop_signals(on_signal, signals)
    try:
        yield caught
    finally:
        remove()


def cancel_current_task() -> Callable[[int], None]:
    """An ``on_signal`` that cancels the task running now, like asyncio.run does for Ctrl+C."""
    task = asyncio.current_task()

    def cancel(signum: int) -> None:
        if task is not None and not task.done():
            task.cancel(f"stopped by {signal.Signals(signum).name}")

    return cancel
