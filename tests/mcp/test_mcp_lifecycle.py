"""Connecting in the background, dying, restarting, failing to start, timing out, shutting down."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import pytest
import pytest_asyncio
from mcp_helpers import free_port, live_children, python_server, status_of, tiny_stdio, wait_for
from mcp_toy_server import ThreadedHttpServer

from catbuddy.config import McpServerSettings
from catbuddy.mcp.client import McpManager
from catbuddy.mcp.tool import McpTool
from catbuddy.tools.base import ToolError

MakeManager = Callable[[Mapping[str, McpServerSettings]], McpManager]


@pytest_asyncio.fixture
async def make_manager(tmp_path: Path) -> AsyncIterator[MakeManager]:
    """Managers for one test; all are closed afterwards and must leave no server process behind."""
    before = set(live_children())
    made: list[McpManager] = []

    def make(servers: Mapping[str, McpServerSettings]) -> McpManager:
        manager = McpManager(servers, tmp_path)
        made.append(manager)
        return manager

    yield make
    for manager in made:
        await manager.aclose()
    leaked = {pid: cmd for pid, cmd in live_children().items() if pid not in before}
    assert not leaked, f"server processes left behind: {leaked}"


def tool(manager: McpManager, name: str) -> McpTool:
    return next(t for t in manager.tools() if t.name == name)


async def call(manager: McpManager, name: str, **args: object) -> str:
    result = await tool(manager, name).run(dict(args), ctx=None)  # type: ignore[arg-type]
    return result.content


async def test_start_returns_at_once_and_servers_connect_in_the_background(make_manager: MakeManager) -> None:
    manager = make_manager({"slow": tiny_stdio("slow", "--start-delay", "2")})
    began = time.monotonic()
    await manager.start()
    assert time.monotonic() - began < 1.0  # the server needs 2 s: start() did not wait for it
    assert [s.state for s in manager.statuses()] == ["connecting"]
    assert manager.tools() == [] and manager.runtime_lines() == [] and manager.runtime_fingerprint() == ""
    assert await manager.wait_ready(timeout=10)
    assert status_of(manager, "slow").state == "connected"


async def test_the_fingerprint_changes_as_each_server_connects(make_manager: MakeManager) -> None:
    manager = make_manager({"fast": tiny_stdio("fast"), "slow": tiny_stdio("slow", "--start-delay", "0.6")})
    seen: list[tuple[str, list[str]]] = []
    manager.on_change(lambda: seen.append((manager.runtime_fingerprint(), manager.runtime_lines())))
    assert manager.runtime_fingerprint() == ""
    await manager.start()
    assert await manager.wait_ready(timeout=10)
    fingerprints = list(dict.fromkeys(fp for fp, _ in seen))
    assert len(fingerprints) == 2 and "" not in fingerprints
    first_lines = next(lines for fp, lines in seen if fp == fingerprints[0])
    assert [line.split(":")[0] for line in first_lines] == ["- MCP server fast"]
    assert [line.split(":")[0] for line in manager.runtime_lines()] == [
        "- MCP server fast",
        "- MCP server slow",
    ]


async def test_a_removed_listener_is_not_called(make_manager: MakeManager) -> None:
    manager = make_manager({"tiny": tiny_stdio()})
    calls: list[str] = []
    remove = manager.on_change(lambda: calls.append("called"))
    remove()
    await manager.start()
    await manager.wait_ready(timeout=10)
    assert calls == []


async def test_a_killed_server_is_reported_and_restarted_on_next_use(make_manager: MakeManager) -> None:
    manager = make_manager({"tiny": tiny_stdio()})
    await manager.start()
    await manager.wait_ready(timeout=10)
    old_pid = int(await call(manager, "mcp__tiny__pid"))
    states: list[str] = []
    manager.on_change(lambda: states.append(status_of(manager, "tiny").state))

    os.kill(old_pid, signal.SIGKILL)
    await wait_for(lambda: status_of(manager, "tiny").state == "disconnected")
    down = status_of(manager, "tiny")
    assert "exited" in down.error and "restarted on next use" in down.error
    assert f"started as pid {old_pid}" in down.stderr_tail
    assert "mcp__tiny__pid" in [t.name for t in manager.tools()]  # kept, so the model can call it

    new_pid = int(await call(manager, "mcp__tiny__pid"))
    assert new_pid != old_pid
    assert status_of(manager, "tiny").state == "connected"
    assert states[0] == "disconnected" and states[-1] == "connected"


async def test_a_crash_during_a_call_is_reported_with_stderr_and_the_next_call_reconnects(
    make_manager: MakeManager,
) -> None:
    manager = make_manager({"tiny": tiny_stdio()})
    await manager.start()
    await manager.wait_ready(timeout=10)
    with pytest.raises(ToolError) as error:
        await call(manager, "mcp__tiny__crash")
    assert "disconnected during the call to 'crash'" in str(error.value)
    assert "tiny server: crashing on purpose" in str(error.value)
    assert await call(manager, "mcp__tiny__echo", text="back again") == "back again"


async def test_a_server_that_exits_during_start_up_fails_with_its_stderr_tail(
    make_manager: MakeManager,
) -> None:
    manager = make_manager({"quitter": tiny_stdio("quitter", "--exit-after-start"), "tiny": tiny_stdio()})
    await manager.start()
    await manager.wait_ready(timeout=10)
    failed = status_of(manager, "quitter")
    assert failed.state == "failed"
    assert failed.error == "the server exited during start-up"
    assert "tiny server: exiting after start" in failed.stderr_tail
    assert status_of(manager, "tiny").state == "connected"


async def test_a_server_that_never_answers_fails_at_the_start_up_timeout(make_manager: MakeManager) -> None:
    mute = python_server("mute", "-c", "import sys; sys.stdin.read()", startup_timeout=0.5)
    manager = make_manager({"mute": mute})
    began = time.monotonic()
    await manager.start()
    await manager.wait_ready(timeout=10)
    assert time.monotonic() - began < 5
    status = status_of(manager, "mute")
    assert status.state == "failed"
    assert status.error.startswith("did not finish starting within 0.5 s")


async def test_a_server_that_cannot_be_restarted_gives_an_error_naming_it(make_manager: MakeManager) -> None:
    marker = Path(os.environ.get("TMPDIR", "/tmp")) / f"catbuddy-mcp-once-{os.getpid()}-{time.monotonic_ns()}"
    # Runs the tiny server the first time only; afterwards it prints why and exits.
    script = (
        "import os, runpy, sys\n"
        f"marker = {str(marker)!r}\n"
        "if os.path.exists(marker):\n"
        "    print('refusing to start twice', file=sys.stderr); sys.exit(1)\n"
        "open(marker, 'w').close()\n"
        f"sys.argv = ['tiny']; runpy.run_path({str(Path(__file__).with_name('tiny_stdio_server.py'))!r}, run_name='__main__')\n"
    )
    manager = make_manager({"once": python_server("once", "-c", script)})
    try:
        await manager.start()
        await manager.wait_ready(timeout=10)
        os.kill(int(await call(manager, "mcp__once__pid")), signal.SIGKILL)
        await wait_for(lambda: status_of(manager, "once").state == "disconnected")
        with pytest.raises(ToolError, match="MCP server 'once' is down") as error:
            await call(manager, "mcp__once__echo", text="x")
        assert "refusing to start twice" in str(error.value)
    finally:
        marker.unlink(missing_ok=True)


async def test_a_tool_list_change_is_picked_up(make_manager: MakeManager) -> None:
    manager = make_manager({"tiny": tiny_stdio()})
    await manager.start()
    await manager.wait_ready(timeout=10)
    before = manager.runtime_fingerprint()
    await call(manager, "mcp__tiny__grow")
    await wait_for(lambda: "mcp__tiny__extra" in [t.name for t in manager.tools()])
    assert manager.runtime_fingerprint() != before


async def test_an_http_server_restart_is_survived(make_manager: MakeManager) -> None:
    http = ThreadedHttpServer(free_port())
    http.start()
    try:
        manager = make_manager({"web": McpServerSettings(name="web", url=http.url)})
        await manager.start()
        await manager.wait_ready(timeout=10)
        assert await call(manager, "mcp__web__echo", text="one") == "one"
        http.stop()
        with pytest.raises(ToolError, match="MCP server 'web'"):
            await call(manager, "mcp__web__echo", text="nobody listening")
        http.start()  # a new server: it has never heard of the old session
        assert await call(manager, "mcp__web__echo", text="two") == "two"
        assert status_of(manager, "web").state == "connected"
    finally:
        http.stop()


async def test_an_http_url_nobody_listens_on_fails_with_the_reason(make_manager: MakeManager) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    manager = make_manager({"web": McpServerSettings(name="web", url=url)})
    await manager.start()
    await manager.wait_ready(timeout=10)
    status = status_of(manager, "web")
    assert status.state == "failed" and status.error.startswith(f"cannot reach {url}")


async def test_a_call_to_an_unknown_server_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="No MCP server named 'ghost'"):
        await McpManager({}, tmp_path).call_tool("ghost", "t", {})


async def test_a_disabled_server_is_not_started(make_manager: MakeManager) -> None:
    manager = make_manager({"off": tiny_stdio("off", disabled=True)})
    await manager.start()
    assert await manager.wait_ready(timeout=1)
    assert status_of(manager, "off").state == "disabled"
    assert not any(str(sys.executable) in cmd for cmd in live_children().values())


async def test_closing_right_after_start_leaves_nothing_running(make_manager: MakeManager) -> None:
    manager = make_manager({"tiny": tiny_stdio(), "slow": tiny_stdio("slow", "--start-delay", "5")})
    await manager.start()
    await manager.aclose()
    assert {s.state for s in manager.statuses()} <= {"failed", "disconnected"}
    assert all(s.error == "stopped" for s in manager.statuses())
