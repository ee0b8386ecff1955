"""An MCP tool that returns an image: a model that sees images gets it as an image (a user message after
the call's results, since a tool message holds only text); other models read the text that describes it."""

from __future__ import annotations

import sys
from pathlib import Path

from catbuddy.agent.loop import AgentLoop
from catbuddy.config import McpServerSettings, Settings
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM
from catbuddy.workspace import Workspace

TOY_SERVER = Path(__file__).parents[1] / "mcp" / "mcp_toy_server.py"  # its `picture` tool returns a PNG


async def run_picture_turn(tmp_path: Path, model: str) -> ScriptedLLM:
    workspace = Workspace(work_root=tmp_path / "proj", home=tmp_path / "home")
    workspace.work_root.mkdir()
    server = McpServerSettings(name="toy", command=sys.executable, args=(str(TOY_SERVER), "stdio"),
                               approval="auto", startup_timeout=30)  # fmt: skip
    replies = [Reply.tool_call("mcp__toy__picture", {}), Reply.text("a tiny picture")]
    with ScriptedLLM(replies, strict=True) as llm:
        settings = Settings(model=model, base_url=llm.base_url, api_key="k", mcp_servers={"toy": server})
        loop = AgentLoop(workspace, settings, channel="headless")
        try:
            await loop.start()
            await loop.run_turn("show me the picture")
        finally:
            await loop.aclose()
    return llm


async def test_a_vision_model_sees_the_image_an_mcp_tool_returned(tmp_path: Path) -> None:
    llm = await run_picture_turn(tmp_path, "gpt-4o")

    *_, tool_message, images = llm.requests[1].messages
    assert tool_message["role"] == "tool" and "[image: image/png" in tool_message["content"]
    assert images["role"] == "user"
    text, image = images["content"]
    assert text["text"] == "[images returned by mcp__toy__picture]"
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert len(list((tmp_path / "home" / "images").glob("*.png"))) == 1


async def test_a_model_without_vision_reads_the_description_only(tmp_path: Path) -> None:
    llm = await run_picture_turn(tmp_path, "scripted")

    last = llm.requests[1].messages[-1]
    assert last["role"] == "tool" and "[image: image/png" in last["content"]
