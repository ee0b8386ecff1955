"""MCP tools as catbuddy tools: names, schemas, approval, and the text the model reads."""

from __future__ import annotations

import base64
import subprocess
import sys
from typing import Any

import pytest

from catbuddy.config import McpServerSettings
from catbuddy.mcp.client import ServerStatus, format_mcp_status
from catbuddy.mcp.stderr_tail import StderrTail
from catbuddy.mcp.tool import (
    MAX_RESULT_CHARS,
    MAX_TOOL_NAME,
    make_mcp_tool,
    mcp_tool_name,
    object_schema,
    result_text,
)
from catbuddy.safety.kinds import ToolKind


class RecordingCaller:
    """Stands in for the manager: returns a fixed wire-shape result and records the call."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((server, tool, arguments))
        return self.result


def test_tool_name_joins_server_and_tool_with_double_underscores() -> None:
    assert mcp_tool_name("time", "get_current_time") == "mcp__time__get_current_time"


def test_tool_name_replaces_characters_function_names_cannot_hold() -> None:
    assert mcp_tool_name("my.server", "read file/v2") == "mcp__my_server__read_file_v2"


def test_long_tool_name_is_cut_to_64_characters_and_stays_unique() -> None:
    first = mcp_tool_name("a-very-long-server-name", "x" * 80)
    second = mcp_tool_name("a-very-long-server-name", "x" * 81)
    assert len(first) == MAX_TOOL_NAME and len(second) == MAX_TOOL_NAME
    assert first != second


def test_clashing_sanitised_names_get_distinct_suffixes() -> None:
    first = mcp_tool_name("s", "a.b")
    second = mcp_tool_name("s", "a/b", taken={first})
    assert first == "mcp__s__a_b" and second != first and second.startswith("mcp__s__a_b_")


def test_schema_without_type_becomes_an_object_schema() -> None:
    schema = object_schema({"properties": {"x": {"type": "string"}}, "required": ["x"]})
    assert schema == {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}


@pytest.mark.parametrize("bad", [None, {"type": "string"}, "not a schema"])
def test_schema_that_is_not_an_object_is_replaced_by_an_empty_object(bad: Any) -> None:
    assert object_schema(bad) == {"type": "object", "properties": {}}


def test_tool_takes_name_description_schema_and_external_kind_from_the_server() -> None:
    settings = McpServerSettings(name="git", command="x")
    remote = {"name": "git_status", "description": "Shows the status", "inputSchema": {"type": "object"}}
    tool = make_mcp_tool(RecordingCaller({}), settings, remote)
    assert tool.name == "mcp__git__git_status" and type(tool).name == tool.name
    assert tool.description == "Shows the status"
    assert tool.parameters == {"type": "object", "properties": {}}
    assert tool.kind is ToolKind.EXTERNAL and not tool.read_only
    assert tool.schema()["function"]["name"] == "mcp__git__git_status"


def test_approval_defaults_to_ask() -> None:
    tool = make_mcp_tool(RecordingCaller({}), McpServerSettings(name="s", command="x"), {"name": "t"})
    assert tool.approval_override == "ask"


def test_server_approval_applies_to_its_tools_and_tool_approval_overrides_it() -> None:
    settings = McpServerSettings(
        name="git",
        command="x",
        approval="auto",
        tool_approval={"git_commit": "deny", "mcp__git__git_reset": "ask"},
    )
    caller = RecordingCaller({})
    approvals = {
        name: make_mcp_tool(caller, settings, {"name": name}).approval_override
        for name in ("git_status", "git_commit", "git_reset")
    }
    assert approvals == {"git_status": "auto", "git_commit": "deny", "git_reset": "ask"}


def test_unknown_tool_approval_value_falls_back_to_asking() -> None:
    settings = McpServerSettings(name="s", command="x", approval="auto", tool_approval={"t": "sometimes"})
    assert make_mcp_tool(RecordingCaller({}), settings, {"name": "t"}).approval_override == "ask"


def test_text_blocks_are_joined_and_images_summarised() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    result = {
        "content": [
            {"type": "text", "text": "first"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "text", "text": "second"},
        ]
    }
    assert result_text(result) == "first\n[image: image/png, 100 bytes]\nsecond"


def test_embedded_resources_show_text_or_a_summary_of_the_blob() -> None:
    result = {
        "content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "contents"}},
            {
                "type": "resource",
                "resource": {"uri": "file:///b.bin", "mimeType": "application/zip", "blob": "AAAA"},
            },
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
        ]
    }
    assert result_text(result) == (
        "[resource: file:///a.txt]\ncontents\n[resource: file:///b.bin, application/zip, 3 bytes]\n"
        "[resource link: file:///c (c)]"
    )


def test_structured_content_is_shown_as_json_when_there_is_no_text() -> None:
    assert result_text({"content": [], "structuredContent": {"n": 1}}) == '{\n  "n": 1\n}'


def test_structured_content_is_not_repeated_next_to_text() -> None:
    assert (
        result_text({"content": [{"type": "text", "text": '{"n": 1}'}], "structuredContent": {"n": 1}})
        == '{"n": 1}'
    )


def test_empty_result_says_so() -> None:
    assert result_text({"content": []}) == "(no output)"


def test_huge_result_is_cut_in_the_middle() -> None:
    text = "a" * MAX_RESULT_CHARS + "b" * 1000 + "END"
    shown = result_text({"content": [{"type": "text", "text": text}]})
    assert len(shown) < len(text) and shown.endswith("END") and "characters cut" in shown


async def test_run_turns_is_error_into_an_error_result() -> None:
    caller = RecordingCaller({"content": [{"type": "text", "text": "bad timezone"}], "isError": True})
    tool = make_mcp_tool(caller, McpServerSettings(name="time", command="x"), {"name": "convert_time"})
    result = await tool.run({"timezone": "Mars/Base"}, ctx=None)  # type: ignore[arg-type]
    assert result.is_error and result.content == "bad timezone"
    assert caller.calls == [("time", "convert_time", {"timezone": "Mars/Base"})]
    assert result.meta == {"server": "time", "tool": "convert_time"}


def test_stderr_tail_keeps_only_the_last_bytes_and_lines() -> None:
    tail = StderrTail(max_bytes=100)
    for i in range(50):
        tail.data_received(f"line {i}\n".encode())
    shown = tail.tail(lines=3)
    assert shown == "line 47\nline 48\nline 49"
    assert "line 0\n" not in tail.tail(lines=100)


def test_status_table_shows_transport_state_tools_and_errors() -> None:
    text = format_mcp_status(
        [
            ServerStatus("time", "connected", ["mcp__time__get_current_time"], transport="stdio", target="t"),
            ServerStatus(
                "web", "failed", [], error="cannot reach http://x", transport="http", stderr_tail=""
            ),
            ServerStatus("bad", "failed", [], error="the server exited during start-up", stderr_tail="boom"),
        ]
    )
    lines = text.splitlines()
    assert lines[0].split() == ["time", "stdio", "connected", "1", "tool"]
    assert "tools: mcp__time__get_current_time" in text
    assert any(line.split()[:3] == ["web", "http", "failed"] for line in lines)
    assert "error: cannot reach http://x" in text
    assert "error: the server exited during start-up" in text and "  boom" in text


def test_status_table_without_servers_says_how_to_add_one() -> None:
    assert "mcpServers" in format_mcp_status([])


def test_importing_the_client_does_not_import_the_mcp_sdk() -> None:
    code = "import sys, catbuddy.mcp.client; assert 'mcp' not in sys.modules, 'mcp was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_status_converts_to_json_for_the_cli() -> None:
    status = ServerStatus("web", "failed", [], error="cannot reach", transport="http", target="http://x")
    assert status.to_json() == {
        "name": "web",
        "state": "failed",
        "tools": [],
        "error": "cannot reach",
        "stderr_tail": "",
        "transport": "http",
        "target": "http://x",
    }


def test_lone_surrogates_in_a_result_become_replacement_characters() -> None:
    result = {"content": [{"type": "text", "text": "bad \udcff byte"}]}
    text = result_text(result)
    assert text == "bad \ufffd byte" and text.encode("utf-8")
