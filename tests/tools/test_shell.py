from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.registry import run_tool
from catbuddy.tools.shell import EXEC_MAX_OUTPUT_CHARS, ExecTool


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for a reaper (containers may not reap)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


async def wait_for_file(path: Path, seconds: float = 5.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_exec_runs_in_the_work_root_and_reports_exit_code(ctx: ToolContext, root: Path) -> None:
    result = await ExecTool().run({"command": "pwd; echo err >&2; exit 3"}, ctx)
    assert str(root) in result.content and "err" in result.content
    assert "Exit code: 3" in result.content
    assert result.meta["exit_code"] == 3 and not result.is_error


async def test_exec_stdin_is_empty(ctx: ToolContext) -> None:
    result = await ExecTool().run({"command": "cat; echo done"}, ctx)
    assert "done" in result.content and "Exit code: 0" in result.content


async def test_exec_timeout_kills_the_whole_process_group(ctx: ToolContext, root: Path) -> None:
    result = await ExecTool().run({"command": "sleep 30 & echo $! > child.pid; wait", "timeout": 0.5}, ctx)
    child = int((root / "child.pid").read_text())
    assert "Timed out after 0.5 s" in result.content and result.meta["timed_out"]
    assert not alive(child)


async def test_exec_cancellation_kills_the_whole_process_group(ctx: ToolContext, root: Path) -> None:
    task = asyncio.create_task(ExecTool().run({"command": "sleep 30 & echo $! > child.pid; wait"}, ctx))
    child = int(await wait_for_file(root / "child.pid"))
    assert alive(child)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not alive(child)


async def test_exec_long_output_is_cut_in_the_middle(ctx: ToolContext) -> None:
    result = await ExecTool().run(
        {"command": "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"}, ctx
    )
    assert len(result.content) <= EXEC_MAX_OUTPUT_CHARS + 200
    assert result.content.startswith("START") and "END" in result.content[-200:]
    assert "characters cut ...]" in result.content


async def test_exec_timeout_argument_is_capped(make_ctx: Callable[..., ToolContext]) -> None:
    ctx = make_ctx(exec_max_timeout=2)
    result = await ExecTool().run({"command": "true", "timeout": 999}, ctx)
    assert "capped at 2 s" in result.content


async def test_exec_refuses_denied_commands_by_itself(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Refused"):
        await ExecTool().run({"command": "echo hi && rm -rf /"}, ctx)


async def test_exec_background_child_does_not_hang_the_call(ctx: ToolContext, root: Path) -> None:
    started = time.monotonic()
    result = await ExecTool().run({"command": "sleep 5 & echo $! > bg.pid; echo started"}, ctx)
    assert time.monotonic() - started < 4
    assert "started" in result.content and "Exit code: 0" in result.content
    os.kill(int((root / "bg.pid").read_text()), 9)


async def test_exec_bad_timeout_is_a_tool_error_result(ctx: ToolContext) -> None:
    result = await run_tool(ExecTool(), {"command": "true", "timeout": -1}, ctx)
    assert result.is_error and "timeout" in result.content
