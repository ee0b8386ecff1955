"""A scripted model session that calls a real MCP server's tool (mcp-server-time over stdio)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from catbuddy.agent.events import Event, Notice, ToolCallFinished
from catbuddy.agent.loop import AgentLoop
from catbuddy.config import McpServerSettings, Settings
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM
from catbuddy.workspace import Workspace


def time_server(approval: str = "auto") -> McpServerSettings:
    return McpServerSettings(
        name="time",
        command=sys.executable,
        args=("-m", "mcp_server_time", "--local-timezone", "UTC"),
        approval=approval,
        startup_timeout=30,
    )


async def run_session(
    tmp_path: Path, servers: dict[str, McpServerSettings], replies: list
) -> tuple[ScriptedLLM, list[Event]]:
    workspace = Workspace(work_root=tmp_path / "proj", home=tmp_path / "home")
    workspace.work_root.mkdir()
    events: list[Event] = []
    with ScriptedLLM(replies, strict=True) as llm:
        settings = Settings(
            model="scripted", base_url=llm.base_url, api_key="test", approval="ask", mcp_servers=servers
        )
        loop = AgentLoop(workspace, settings, channel="headless")
        loop.add_listener(events.append)
        try:
            await loop.start()
            await loop.run_turn("What time is it in UTC?")
        finally:
            await loop.aclose()
    return llm, events


async def test_model_calls_an_mcp_tool_and_gets_its_result(tmp_path: Path) -> None:
    replies = [
        Reply.tool_call("mcp__time__get_current_time", {"timezone": "UTC"}),
        Reply.text("It is some time in UTC."),
    ]
    llm, events = await run_session(tmp_path, {"time": time_server()}, replies)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(finished) == 1 and not finished[0].is_error
    assert '"timezone": "UTC"' in finished[0].result or "UTC" in finished[0].result
    first = llm.requests[0]
    assert "mcp__time__get_current_time" in [t["function"]["name"] for t in first["tools"]]
    assert "MCP server time" in first["messages"][0]["content"]
    tool_message = llm.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == finished[0].result


async def test_mcp_tool_needing_approval_is_refused_headless(tmp_path: Path) -> None:
    replies = [Reply.tool_call("mcp__time__get_current_time", {"timezone": "UTC"}), Reply.text("ok")]
    llm, events = await run_session(tmp_path, {"time": time_server(approval="ask")}, replies)
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished[0].is_error and "needs approval" in finished[0].result
    assert json.dumps(llm.requests[1]["messages"][-1]["content"]).count("headless") >= 1


async def test_a_server_that_cannot_start_is_reported_and_the_session_works(tmp_path: Path) -> None:
    broken = McpServerSettings(name="broken", command="/nonexistent/mcp-server", startup_timeout=5)
    llm, events = await run_session(tmp_path, {"broken": broken}, [Reply.text("still here")])
    assert any(isinstance(e, Notice) and "MCP server broken failed" in e.text for e in events)
    assert llm.requests[0]["messages"][0]["role"] == "system"
