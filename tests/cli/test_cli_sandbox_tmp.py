"""The sandbox's private /tmp does not outlive the process that made it (issue 31: `exit_now()` skips
atexit on purpose, so every headless run left a `catbuddy-sandbox-*` directory behind)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from catbuddy.sandbox.launch import PRIVATE_TMP_PREFIX, remove_stale_private_tmps
from catbuddy.testing.script import Reply


def test_a_headless_run_with_a_sandboxed_command_leaves_no_private_tmp(cli, scripted_llm, tmp_path) -> None:
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    scripted_llm.push(
        Reply.tool_call("exec", {"command": "echo kept > /tmp/note && cat /tmp/note"}), Reply.text("ok")
    )

    done = cli("run", "write a note", env={"TMPDIR": str(temp)})

    assert done.returncode == 0, done.stderr
    result = json.dumps(scripted_llm.requests[-1].messages)
    assert "kept" in result, "the command did not run in the sandbox with its private /tmp"
    assert not list(temp.glob(f"{PRIVATE_TMP_PREFIX}*"))


def test_a_private_tmp_left_by_a_killed_process_is_removed_by_the_next_one(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(gone.stdout)
    stale = tmp_path / f"{PRIVATE_TMP_PREFIX}{dead_pid}-abc123"
    (stale / "left").mkdir(parents=True)
    mine = tmp_path / f"{PRIVATE_TMP_PREFIX}{os.getpid()}-def456"
    mine.mkdir()
    unrelated = tmp_path / f"{PRIVATE_TMP_PREFIX}notapid"
    unrelated.mkdir()

    remove_stale_private_tmps(str(tmp_path))

    assert not stale.exists()
    assert mine.exists() and unrelated.exists()
