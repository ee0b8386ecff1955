"""A `catbuddy run` killed mid-tool leaves a session the next run can continue, lock and all."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from process_helpers import unique_sleep, wait_until_gone, wait_until_running

from catbuddy.context.governance.governor import protocol_problems
from catbuddy.testing.script import Reply

BACKFILL = "[Tool result unavailable — call was interrupted or lost]"


def wait_for_text(path: Path, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear within {timeout} s")


def test_a_run_killed_mid_tool_can_be_continued(cli, scripted_llm, project, llm_env):
    sleep = unique_sleep()
    scripted_llm.push(
        Reply.tool_call("exec", {"command": f"echo go > started.txt; {sleep}"}, id="call_sleep", delay=0.05),
        Reply.text("Picked up where we left off."),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run", "sleep a while"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=llm_env,
    )
    try:
        wait_for_text(project / "started.txt")
        assert wait_until_running(sleep)
        process.kill()
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert wait_until_gone(sleep) == []  # the exec child died with catbuddy

    done = cli("run", "--continue", "go on")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Picked up where we left off."
    sent = scripted_llm.requests[-1].messages
    assert protocol_problems(sent) == []
    roles = [m["role"] for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_sleep", "content": BACKFILL}
    assert sent[4]["content"].startswith("go on")
