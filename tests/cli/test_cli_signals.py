"""SIGTERM and SIGHUP stop `catbuddy run` as Ctrl+C does: stop record, children killed, exit 128 + N.
SIGKILL cannot be handled, yet no exec child survives it either (see test_cli_killed)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import unique_sleep, wait_until_gone, wait_until_running

from catbuddy.testing.script import Reply


def records(home: Path) -> list[dict]:
    files = sorted(home.glob("projects/*/sessions/*.jsonl"))
    return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_kills_the_exec_tree_and_records_the_stop(
    scripted_llm, project, llm_env, tmp_path, signum: int, sandbox: str
) -> None:
    sleep = unique_sleep()
    scripted_llm.push(Reply.tool_call("exec", {"command": f"{sleep} & setsid {sleep} & {sleep}"}, id="c1"))
    env = {**llm_env, "CATBUDDY_SANDBOX": sandbox}
    process = subprocess.Popen(
        [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run", "sleep"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert len(wait_until_running(sleep, 3, timeout=30)) == 3
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + signum, err
    assert wait_until_gone(sleep) == []
    assert "Traceback" not in err
    home = Path(env["CATBUDDY_HOME"])
    kinds = [r.get("kind") for r in records(home) if r.get("type") == "event"]
    assert "stop" in kinds
    tool = [r for r in records(home) if r.get("role") == "tool"]
    assert tool and tool[-1]["tool_call_id"] == "c1"
