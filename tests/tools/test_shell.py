"""The exec tool, run both ways it can run: inside the bubblewrap sandbox, and unsandboxed under the
supervisor (sandbox = "off"). Either way nothing it starts outlives the call."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from process_helpers import unique_sleep, wait_until_gone, wait_until_running

from catbuddy import sandbox
from catbuddy.config import SandboxSettings
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.registry import run_tool
from catbuddy.tools.shell import EXEC_MAX_OUTPUT_CHARS, ExecTool

BWRAP_WORKS = sandbox.status_for(SandboxSettings()).active


@pytest.fixture(params=["sandboxed", "supervised"])
def exec_ctx(request: pytest.FixtureRequest, ctx: ToolContext) -> ToolContext:
    """The same tool context, with exec in the sandbox or unsandboxed under the supervisor."""
    if request.param == "sandboxed" and not BWRAP_WORKS:
        pytest.skip("bubblewrap cannot start a sandbox on this machine")
    mode = "workspace-write" if request.param == "sandboxed" else "off"
    return replace(ctx, settings=replace(ctx.settings, sandbox=SandboxSettings(mode=mode)))


async def test_exec_runs_in_the_work_root_and_reports_exit_code(exec_ctx: ToolContext, root: Path) -> None:
    result = await ExecTool().run({"command": "pwd; echo err >&2; exit 3"}, exec_ctx)
    assert str(root) in result.content and "err" in result.content
    assert "Exit code: 3" in result.content
    assert result.meta["exit_code"] == 3 and not result.is_error


async def test_exec_stdin_is_empty(exec_ctx: ToolContext) -> None:
    result = await ExecTool().run({"command": "cat; echo done"}, exec_ctx)
    assert "done" in result.content and "Exit code: 0" in result.content


async def test_exec_timeout_kills_every_process_it_started(exec_ctx: ToolContext) -> None:
    sleep = unique_sleep()
    command = f"{sleep} & setsid {sleep} & ( {sleep} & ) ; wait"
    result = await ExecTool().run({"command": command, "timeout": 1}, exec_ctx)
    assert "Timed out after 1 s" in result.content and result.meta["timed_out"]
    assert wait_until_gone(sleep) == []


async def test_exec_cancellation_kills_every_process_it_started(exec_ctx: ToolContext, root: Path) -> None:
    sleep = unique_sleep()
    task = asyncio.create_task(
        ExecTool().run({"command": f"{sleep} & setsid {sleep} & {sleep}"}, exec_ctx)
    )
    assert len(await asyncio.to_thread(wait_until_running, sleep, 3)) == 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_until_gone(sleep) == []


async def test_background_children_do_not_outlive_the_call_or_hang_it(exec_ctx: ToolContext) -> None:
    sleep = unique_sleep()
    started = time.monotonic()
    result = await ExecTool().run(
        {"command": f"{sleep} & setsid {sleep} & nohup {sleep} >/dev/null 2>&1 & echo started"}, exec_ctx
    )
    assert time.monotonic() - started < 4
    assert "started" in result.content and "Exit code: 0" in result.content
    assert wait_until_gone(sleep) == []


async def test_a_command_killed_by_a_signal_says_so(exec_ctx: ToolContext) -> None:
    result = await ExecTool().run({"command": "kill -9 $$"}, exec_ctx)
    assert "SIGKILL" in result.content


async def test_exec_long_output_is_cut_in_the_middle(exec_ctx: ToolContext) -> None:
    result = await ExecTool().run(
        {"command": "echo START; head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"}, exec_ctx
    )
    assert len(result.content) <= EXEC_MAX_OUTPUT_CHARS + 400
    assert result.content.startswith("START") and "END" in result.content[-400:]
    assert "characters cut ...]" in result.content


async def test_secrets_are_not_in_the_environment(
    exec_ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefghijklmnopqrstuvwx")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret_value_1")
    monkeypatch.setenv("DB_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("DATABASE_URL", "postgres://me:hunter2hunter2@db/x")
    monkeypatch.setenv("MY_CUSTOM_KEY_VAR", "value-one")
    monkeypatch.setenv("HARMLESS", "kept")
    ctx = replace(exec_ctx, settings=replace(exec_ctx.settings, api_key="configured-key-123"))
    monkeypatch.setenv("UNRELATED_NAME", "configured-key-123")
    result = await ExecTool().run({"command": "env"}, ctx)
    for leaked in ("sk-abcdef", "ghp_secret", "hunter2", "value-one", "configured-key-123"):
        assert leaked not in result.content
    assert "HARMLESS=kept" in result.content


async def test_exec_env_allow_lets_chosen_variables_through(
    exec_ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NPM_TOKEN", "npm-token-value")
    monkeypatch.setenv("GITHUB_TOKEN", "gh-token-value")
    settings = exec_ctx.settings
    ctx = replace(exec_ctx, settings=replace(settings, sandbox=replace(settings.sandbox, env_allow=("NPM_*",))))
    result = await ExecTool().run({"command": "env"}, ctx)
    assert "NPM_TOKEN=npm-token-value" in result.content and "gh-token-value" not in result.content


async def test_exec_timeout_argument_is_capped(make_ctx: Callable[..., ToolContext]) -> None:
    ctx = make_ctx(exec_max_timeout=2)
    result = await ExecTool().run({"command": "true", "timeout": 999}, ctx)
    assert "capped at 2 s" in result.content


async def test_exec_refuses_denied_commands_by_itself(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="Refused"):
        await ExecTool().run({"command": "echo hi && rm -rf /"}, ctx)


async def test_exec_bad_timeout_is_a_tool_error_result(ctx: ToolContext) -> None:
    result = await run_tool(ExecTool(), {"command": "true", "timeout": -1}, ctx)
    assert result.is_error and "timeout" in result.content
