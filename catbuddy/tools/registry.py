"""The tool registry, the built-in tools, and ``run_tool``: the one way a tool call is executed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from catbuddy.text import valid_text
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult

# Built-ins are offered to the model in this order; anything else (MCP tools) follows, sorted. The only
# place built-ins are named: everything else about a tool comes from the tool itself (tools/base.py).
BUILTIN_ORDER = (
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "grep",
    "exec",
    "web_fetch",
    "web_search",
    "skill",
    "recall",  # appended, never inserted: the schemas' order is part of the cached prompt prefix
    "update_plan",
    "task",  # registered by the agent when subagents are allowed ([agents] max_depth)
    "apply_patch",  # offered by model (agent/toolset.py edit_tools_for)
)
OFFERED_BY_MODEL = ("apply_patch",)  # not in builtin_tools(): offer_edit_tools adds them per model
# Families trained on Codex's patch format get apply_patch instead of edit_file, unless the model's
# `edit_tools` setting says otherwise.
PATCH_FAMILIES = ("gpt-4.1", "gpt-5", "o1", "o3", "o4")
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def builtin_tools() -> list[Tool]:
    """Fresh instances of catbuddy's own tools (the `skill` tool is added by the caller)."""
    from catbuddy.tools.files import EditFileTool, ReadFileTool, WriteFileTool
    from catbuddy.tools.grep import GrepTool
    from catbuddy.tools.list_dir import ListDirTool
    from catbuddy.tools.plan import UpdatePlanTool
    from catbuddy.tools.recall import RecallTool
    from catbuddy.tools.shell import ExecTool
    from catbuddy.tools.web import WebFetchTool, WebSearchTool

    return [
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        ListDirTool(),
        GrepTool(),
        ExecTool(),
        WebFetchTool(),
        WebSearchTool(),
        RecallTool(),
        UpdatePlanTool(),
    ]


def edit_tools_for(model: str, chosen: tuple[str, ...] | None) -> tuple[str, ...]:
    """The file-editing tools offered to ``model``: ``chosen`` (its `edit_tools` setting), else by family."""
    if chosen:
        return chosen
    base = model.split("/")[-1].lower()
    if base.startswith(PATCH_FAMILIES) or "codex" in base:
        return ("apply_patch",)
    return ("edit_file",)


def offer_edit_tools(registry: ToolRegistry, names: tuple[str, ...]) -> None:
    """Register exactly the chosen editing tools; nothing changes (no schema is rebuilt) when they
    already are."""
    from catbuddy.tools.apply_patch import ApplyPatchTool
    from catbuddy.tools.files import EditFileTool

    makers: dict[str, type[Tool]] = {"edit_file": EditFileTool, "apply_patch": ApplyPatchTool}
    for name, make in makers.items():
        present = registry.get(name) is not None
        if name in names and not present:
            registry.register(make())
        elif name not in names and present:
            registry.unregister(name)


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] | None = None  # built once per set of tools
        self._compactable: frozenset[str] | None = None
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; a tool of the same name is replaced (e.g. a reconnected MCP server's)."""
        self._tools[tool.name] = tool
        self._schemas = self._compactable = None

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._schemas = self._compactable = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        builtin = [name for name in BUILTIN_ORDER if name in self._tools]
        return builtin + sorted(name for name in self._tools if name not in BUILTIN_ORDER)

    def tools(self) -> list[Tool]:
        return [self._tools[name] for name in self.names()]

    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` of a request, in a fixed order (built-ins first, then MCP tools by name), so the
        prompt prefix stays byte-identical. The same list until the set of tools changes: do not mutate."""
        if self._schemas is None:
            self._schemas = [tool.schema() for tool in self.tools()]
        return self._schemas

    def microcompactable(self) -> frozenset[str]:
        """The tools whose old results microcompaction may stub (docs/architecture.md §4)."""
        if self._compactable is None:
            self._compactable = frozenset(name for name, tool in self._tools.items() if tool.microcompactable)
        return self._compactable

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools())

    def __len__(self) -> int:
        return len(self._tools)


def validate_args(tool: Tool, args: Any) -> dict[str, Any]:
    """Check ``args`` against the tool's JSON schema (required keys, simple types).

    Numbers and booleans sent as strings ("5", "true") are accepted and converted: models do that.
    """
    if not isinstance(args, dict):
        raise ToolError(f"{tool.name} takes a JSON object of arguments, got {type(args).__name__}.")
    schema = tool.parameters or {}
    properties: dict[str, Any] = schema.get("properties", {})
    problems: list[str] = []
    missing = [key for key in schema.get("required", []) if args.get(key) is None]
    if missing:
        problems.append("missing required " + ", ".join(f"`{k}`" for k in missing))
    checked = dict(args)
    for key, value in args.items():
        expected = properties.get(key, {}).get("type")
        if value is None or not isinstance(expected, str) or expected not in JSON_TYPES:
            continue
        converted = _coerce(value, expected)
        if converted is None:
            problems.append(
                f"`{key}` must be {_article(expected)} {expected}, got {type(value).__name__} {value!r:.60}"
            )
        else:
            checked[key] = converted
    if problems:
        expected_keys = ", ".join(f"{k} ({p.get('type', 'any')})" for k, p in properties.items())
        raise ToolError(
            f"Invalid arguments for {tool.name}: {'; '.join(problems)}. It takes: {expected_keys}."
        )
    return checked


def _coerce(value: Any, expected: str) -> Any:
    if expected in ("integer", "number") and isinstance(value, bool):
        return None
    if expected == "boolean" and not isinstance(value, bool):
        text = str(value).strip().lower() if isinstance(value, str) else ""
        return {"true": True, "false": False}.get(text)
    if expected in ("integer", "number") and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        if expected == "integer":
            return int(number) if number.is_integer() else None
        return number
    if expected == "integer" and isinstance(value, float):
        return int(value) if value.is_integer() else None
    return value if isinstance(value, JSON_TYPES[expected]) else None


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


async def run_tool(tool: Tool, args: Any, ctx: ToolContext) -> ToolResult:
    """Run one call. Every failure comes back as an error result; only cancellation propagates.

    The result is the edge where tool output enters the history: its text is made valid UTF-8 here
    (lone surrogates from undecodable bytes become U+FFFD), whatever tool produced it."""
    return _clean(await _run(tool, args, ctx))


async def _run(tool: Tool, args: Any, ctx: ToolContext) -> ToolResult:
    try:
        checked = validate_args(tool, args)
        result = await tool.run(checked, ctx)
        if not isinstance(result, ToolResult):
            raise ToolError(f"{tool.name} returned {type(result).__name__} instead of a result.")
        if not isinstance(result.content, str):
            raise ToolError(f"{tool.name} returned {type(result.content).__name__} content, not text.")
        return result
    except asyncio.CancelledError:
        raise
    except ToolError as exc:
        return ToolResult(f"Error: {exc}", is_error=True)
    except Exception as exc:  # a bug in a tool must not end the turn (RecursionError, MemoryError …)
        return ToolResult(
            f"Error: {tool.name} failed unexpectedly: {type(exc).__name__}: {exc}", is_error=True
        )


def _clean(result: ToolResult) -> ToolResult:
    result.content = valid_text(result.content)
    if isinstance(result.display, str):
        result.display = valid_text(result.display)
    return result
