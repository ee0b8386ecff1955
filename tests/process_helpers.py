"""Finding the processes a test started, also inside a sandbox's PID namespace (where `$$` and `$!` are
not host pids): each test runs `sleep` with a duration no other process uses, and looks for it in /proc."""

from __future__ import annotations

import os
import secrets
import time


def unique_sleep(seconds: int = 30) -> str:
    """A `sleep` command line that only this call uses, e.g. `sleep 30.418273`."""
    return f"sleep {seconds}.{secrets.randbelow(10**6):06d}"


def marked_processes(marker: str, *, exact: bool = False) -> list[int]:
    """Live processes (zombies excluded) whose command line contains ``marker`` (``exact``: starts with
    it, so only the `sleep` itself counts, not a shell or sandbox whose arguments mention it)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 :].split()[:1]
        matches = cmdline.startswith(marker) if exact else marker in cmdline
        if matches and state != [b"Z"] and "pytest" not in cmdline:
            found.append(int(name))
    return found


def wait_until_gone(marker: str, timeout: float = 5.0) -> list[int]:
    """The processes still alive after ``timeout`` (empty when all are gone)."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked_processes(marker)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def wait_until_running(marker: str, count: int = 1, timeout: float = 10.0) -> list[int]:
    """The processes running exactly ``marker`` once ``count`` of them are (or at ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        found = marked_processes(marker, exact=True)
        if len(found) >= count or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)
