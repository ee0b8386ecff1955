from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from catbuddy.safety.kinds import ToolKind
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.registry import BUILTIN_ORDER, OFFERED_BY_MODEL, ToolRegistry, builtin_tools, run_tool


class Echo(Tool):
    name = "mcp__b__echo"
    description = "echo"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"text": {"type": "string"}, "times": {"type": "integer"}, "loud": {"type": "boolean"}},
        "required": ["text"],
    }
    kind = ToolKind.EXTERNAL

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if args["text"] == "boom":
            raise RuntimeError("kaput")
        if args["text"] == "bad":
            raise ToolError("bad input")
        if args["text"] == "hang":
            await asyncio.sleep(10)
        return ToolResult(args["text"] * args.get("times", 1) + ("!" if args.get("loud") else ""))


class Other(Echo):
    name = "mcp__a__other"


def test_builtin_tools_have_unique_names_and_valid_schemas() -> None:
    tools = builtin_tools()
    names = [t.name for t in tools]
    assert names == [n for n in BUILTIN_ORDER if n not in ("skill", "task") and n not in OFFERED_BY_MODEL]
    for tool in tools:
        schema = tool.schema()["function"]
        assert schema["parameters"]["type"] == "object"
        assert set(schema["parameters"]["required"]) <= set(schema["parameters"]["properties"])
        assert schema["description"]


def test_registry_orders_builtins_first_then_others_sorted() -> None:
    registry = ToolRegistry([Echo(), Other(), *reversed(builtin_tools())])
    builtins = [n for n in BUILTIN_ORDER if n not in ("skill", "task") and n not in OFFERED_BY_MODEL]
    assert registry.names()[: len(builtins)] == builtins
    assert registry.names()[len(builtins) :] == ["mcp__a__other", "mcp__b__echo"]
    assert [s["function"]["name"] for s in registry.schemas()] == registry.names()


def test_new_builtins_are_appended_so_older_prefixes_keep_their_order() -> None:
    assert BUILTIN_ORDER[-4:] == ("recall", "update_plan", "task", "apply_patch")
    assert BUILTIN_ORDER[:-4] == (
        "read_file", "write_file", "edit_file", "list_dir", "grep", "exec", "web_fetch", "web_search", "skill"
    )  # fmt: skip


def test_registry_register_get_unregister_contains() -> None:
    registry = ToolRegistry()
    registry.register(Echo())
    assert "mcp__b__echo" in registry and isinstance(registry.get("mcp__b__echo"), Echo)
    registry.unregister("mcp__b__echo")
    assert "mcp__b__echo" not in registry and registry.get("mcp__b__echo") is None


async def test_run_tool_reports_missing_and_wrong_arguments(ctx: ToolContext) -> None:
    result = await run_tool(Echo(), {"times": "many"}, ctx)
    assert result.is_error
    assert "missing required `text`" in result.content and "`times` must be an integer" in result.content


async def test_run_tool_coerces_numbers_and_booleans_sent_as_strings(ctx: ToolContext) -> None:
    result = await run_tool(Echo(), {"text": "ab", "times": "2", "loud": "true"}, ctx)
    assert not result.is_error and result.content == "abab!"


async def test_run_tool_turns_errors_into_results(ctx: ToolContext) -> None:
    bad = await run_tool(Echo(), {"text": "bad"}, ctx)
    assert bad.is_error and bad.content == "Error: bad input"
    boom = await run_tool(Echo(), {"text": "boom"}, ctx)
    assert boom.is_error and "RuntimeError: kaput" in boom.content
    not_a_dict = await run_tool(Echo(), ["text"], ctx)
    assert not_a_dict.is_error and "JSON object" in not_a_dict.content


async def test_run_tool_lets_cancellation_through(ctx: ToolContext) -> None:
    task = asyncio.create_task(run_tool(Echo(), {"text": "hang"}, ctx))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
