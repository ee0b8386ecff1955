"""Against real MCP servers, started once for the module: mcp-server-time and mcp-server-git over stdio,
the tiny wire-level server over stdio, the SDK-built toy server over streamable HTTP, and a command
that does not exist."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from mcp_helpers import (
    free_port,
    git_server,
    live_children,
    make_git_repo,
    status_of,
    time_server,
    tiny_stdio,
)
from mcp_toy_server import ThreadedHttpServer

from catbuddy.config import McpServerSettings
from catbuddy.mcp.client import McpManager, format_mcp_status
from catbuddy.mcp.tool import McpTool
from catbuddy.tools.base import ToolError

pytestmark = pytest.mark.asyncio(loop_scope="module")

CALL_TIMEOUT = 1.0  # for the tiny and toy servers, whose `sleep` tool outlasts it


@pytest.fixture(scope="module")
def http_toy() -> Iterator[ThreadedHttpServer]:
    server = ThreadedHttpServer(free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_git_repo(tmp_path_factory.mktemp("git") / "repo")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(http_toy: ThreadedHttpServer, repo: Path) -> AsyncIterator[McpManager]:
    servers = {
        "time": time_server(),
        "git": git_server(repo, approval="auto", tool_approval={"git_commit": "deny"}),
        "tiny": tiny_stdio(call_timeout=CALL_TIMEOUT),
        "web": McpServerSettings(
            name="web", url=http_toy.url, headers={"X-Catbuddy-Test": "1"}, call_timeout=CALL_TIMEOUT
        ),
        "missing": McpServerSettings(name="missing", command="catbuddy-no-such-mcp-server"),
        "off": tiny_stdio("off", disabled=True),
    }
    before = set(live_children())
    mcp = McpManager(servers, repo)
    await mcp.start()
    assert await mcp.wait_ready(timeout=20)
    yield mcp
    await mcp.aclose()
    assert set(live_children()) <= before, "a server process outlived aclose()"


def tool(manager: McpManager, name: str) -> McpTool:
    return next(t for t in manager.tools() if t.name == name)


async def test_working_servers_connect_and_list_their_tools(manager: McpManager) -> None:
    states = {s.name: s.state for s in manager.statuses()}
    assert states == {
        "time": "connected",
        "git": "connected",
        "tiny": "connected",
        "web": "connected",
        "missing": "failed",
        "off": "disabled",
    }
    assert status_of(manager, "time").tools == ["mcp__time__get_current_time", "mcp__time__convert_time"]
    assert "mcp__git__git_status" in status_of(manager, "git").tools
    assert "mcp__web__echo" in status_of(manager, "web").tools


async def test_a_missing_command_fails_with_a_clear_error_and_no_tools(manager: McpManager) -> None:
    missing = status_of(manager, "missing")
    assert "command not found" in missing.error and "catbuddy-no-such-mcp-server" in missing.error
    assert not any(t.server == "missing" for t in manager.tools())


async def test_tools_carry_the_servers_json_schema(manager: McpManager) -> None:
    get_time = tool(manager, "mcp__time__get_current_time")
    assert get_time.parameters["type"] == "object"
    assert "timezone" in get_time.parameters["properties"]
    assert get_time.description


async def test_get_current_time_returns_the_time_in_utc(manager: McpManager) -> None:
    result = await tool(manager, "mcp__time__get_current_time").run({"timezone": "UTC"}, ctx=None)  # type: ignore[arg-type]
    assert not result.is_error
    assert json.loads(result.content)["timezone"] == "UTC"


async def test_a_tool_error_from_the_server_reaches_the_model_as_an_error(manager: McpManager) -> None:
    args = {"source_timezone": "Nowhere/Atlantis", "time": "10:00", "target_timezone": "UTC"}
    result = await tool(manager, "mcp__time__convert_time").run(args, ctx=None)  # type: ignore[arg-type]
    assert result.is_error
    assert "Nowhere/Atlantis" in result.content


async def test_git_status_reports_the_untracked_file(manager: McpManager, repo: Path) -> None:
    result = await tool(manager, "mcp__git__git_status").run({"repo_path": str(repo)}, ctx=None)  # type: ignore[arg-type]
    assert not result.is_error
    assert "new.txt" in result.content


async def test_http_server_answers_calls_and_tool_errors(manager: McpManager) -> None:
    echoed = await tool(manager, "mcp__web__echo").run({"text": "over http"}, ctx=None)  # type: ignore[arg-type]
    failed = await tool(manager, "mcp__web__fail").run({"reason": "testing"}, ctx=None)  # type: ignore[arg-type]
    assert (echoed.content, echoed.is_error) == ("over http", False)
    assert failed.is_error and "failed on purpose: testing" in failed.content


async def test_an_image_result_is_summarised_for_the_model(manager: McpManager) -> None:
    result = await tool(manager, "mcp__web__picture").run({}, ctx=None)  # type: ignore[arg-type]
    assert result.content == "[image: image/png, 70 bytes]"


@pytest.mark.parametrize("server", ["tiny", "web"])
async def test_a_slow_call_hits_the_call_timeout_and_the_server_stays_usable(
    manager: McpManager, server: str
) -> None:
    with pytest.raises(ToolError, match=rf"'sleep' on server '{server}' timed out after 1 s"):
        await tool(manager, f"mcp__{server}__sleep").run({"seconds": 10}, ctx=None)  # type: ignore[arg-type]
    result = await tool(manager, f"mcp__{server}__echo").run({"text": "still here"}, ctx=None)  # type: ignore[arg-type]
    assert result.content == "still here"
    assert status_of(manager, server).state == "connected"


async def test_approval_follows_the_server_then_the_tool_setting(manager: McpManager) -> None:
    assert tool(manager, "mcp__git__git_status").approval_override == "auto"
    assert tool(manager, "mcp__git__git_commit").approval_override == "deny"
    assert tool(manager, "mcp__time__get_current_time").approval_override == "ask"


async def test_runtime_lines_name_each_connected_server_and_its_tools(manager: McpManager) -> None:
    lines = manager.runtime_lines()
    assert "- MCP server time: tools mcp__time__get_current_time, mcp__time__convert_time" in lines
    assert {line.split(":")[0] for line in lines} == {
        "- MCP server time",
        "- MCP server git",
        "- MCP server tiny",
        "- MCP server web",
    }


async def test_status_table_lists_every_server(manager: McpManager) -> None:
    text = format_mcp_status(manager.statuses())
    for name in ("time", "git", "tiny", "web", "missing", "off"):
        assert any(line.split()[:1] == [name] for line in text.splitlines())
    assert "command not found" in text
