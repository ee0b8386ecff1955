"""The tools one agent offers the model: the built-ins, the skill tool and connected MCP tools."""

from __future__ import annotations

from collections.abc import Iterable

from catbuddy.tools.base import Tool
from catbuddy.tools.registry import ToolRegistry, builtin_tools
from catbuddy.tools.skill import SkillTool
from catbuddy.tools.task import TaskTool


def build_registry(extra: Iterable[Tool] = (), *, subagents: bool = False) -> ToolRegistry:
    """The built-ins and the skill tool; with ``subagents`` (``[agents] max_depth`` ≥ 1) the `task` tool."""
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    registry.register(SkillTool())
    if subagents:
        registry.register(TaskTool())
    for tool in extra:
        registry.register(tool)
    return registry


def refresh_external(registry: ToolRegistry, tools: Iterable[Tool], prefix: str = "mcp__") -> None:
    """Replace the registry's MCP tools with the current set (a server connected or dropped)."""
    for name in [n for n in registry.names() if n.startswith(prefix)]:
        registry.unregister(name)
    for tool in tools:
        registry.register(tool)
