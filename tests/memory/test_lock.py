"""One Dream at a time across processes."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from catbuddy.memory.lock import DreamBusy, DreamLock
from catbuddy.memory.paths import MemoryPaths

HOLD = (
    "import sys, time; from pathlib import Path; from catbuddy.memory.lock import DreamLock\n"
    "lock = DreamLock(Path(sys.argv[1])).acquire(); print('locked', flush=True); time.sleep(60)"
)


def test_a_second_process_is_refused_with_the_holders_pid(paths: MemoryPaths) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(paths.lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(DreamBusy) as busy:
            DreamLock(paths.lock).acquire()
        assert busy.value.pid == holder.pid
        assert f"pid {holder.pid}" in str(busy.value)
    finally:
        holder.kill()
        holder.wait()
    # The kernel dropped the dead holder's lock: it can be taken at once.
    deadline = time.monotonic() + 5
    while True:
        try:
            lock = DreamLock(paths.lock).acquire()
            break
        except DreamBusy:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    lock.release()


def test_releasing_lets_the_next_one_in(paths: MemoryPaths) -> None:
    with DreamLock(paths.lock) as first:
        assert first.held
    second = DreamLock(paths.lock).acquire()
    assert second.held
    second.release()
    second.release()  # twice is harmless
    assert not second.held
