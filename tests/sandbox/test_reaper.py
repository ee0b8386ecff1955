"""The supervisor of unsandboxed commands: nothing outlives the call or catbuddy, whatever kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from process_helpers import unique_sleep, wait_until_gone, wait_until_running

from catbuddy.sandbox.launch import REAPER


def supervise(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), "--", "bash", "-c", command],
        capture_output=True, text=True, timeout=30,
    )


def test_the_exit_status_is_the_commands() -> None:
    assert supervise("exit 7").returncode == 7
    assert supervise("echo out; echo err >&2").stdout == "out\n"


def test_death_by_a_signal_is_passed_on() -> None:
    assert supervise("kill -TERM $$").returncode == -signal.SIGTERM


def test_background_and_setsid_children_end_with_the_command() -> None:
    sleep = unique_sleep()
    done = supervise(f"{sleep} & setsid {sleep} & ( setsid {sleep} & ) ; echo started")
    assert done.returncode == 0 and "started" in done.stdout
    assert wait_until_gone(sleep) == []


def test_sigkill_of_catbuddy_still_kills_everything(tmp_path: Path) -> None:
    """A stand-in for catbuddy starts the supervisor, then dies by SIGKILL: the kernel's parent-death
    signal makes the supervisor clean up, setsid children included."""
    sleep = unique_sleep()
    parent = tmp_path / "parent.py"
    parent.write_text(textwrap.dedent(f"""
        import os, subprocess, sys, time
        subprocess.Popen([sys.executable, "-I", "-S", {str(REAPER)!r}, str(os.getpid()), "--", "bash", "-c",
                          "{sleep} & setsid {sleep} & {sleep}"], start_new_session=True)
        time.sleep(60)
    """))
    stand_in = subprocess.Popen([sys.executable, str(parent)])
    try:
        assert len(wait_until_running(sleep, 3)) == 3
        stand_in.send_signal(signal.SIGKILL)
        stand_in.wait(10)
    finally:
        if stand_in.poll() is None:
            stand_in.kill()
    assert wait_until_gone(sleep, timeout=10) == []


def test_sigterm_ends_the_tree_within_the_grace_period() -> None:
    sleep = unique_sleep()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), "--", "bash", "-c",
         f"trap '' TERM; setsid {sleep} & {sleep}"],
        start_new_session=True,
    )
    assert len(wait_until_running(sleep, 2)) == 2
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(10)
    assert wait_until_gone(sleep) == [] and time.monotonic() - started < 5
