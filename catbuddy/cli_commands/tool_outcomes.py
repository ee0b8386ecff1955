"""A session's tool calls and how each ended, read from the ``meta`` stored beside each result
(``catbuddy sessions show``). A result stored without one (a session written before results carried
their outcome) shows an unknown status; nothing is guessed from the result's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from catbuddy.agent.toolset import build_registry
from catbuddy.session.records import MessageRecord, Record
from catbuddy.tool_meta import ToolMeta, ToolStatus
from catbuddy.tools.registry import ToolRegistry

MARKS = {ToolStatus.OK: "✓", ToolStatus.UNKNOWN: "·"}  # every failed status: ✗


def tool_calls(records: Iterable[Record], registry: ToolRegistry | None = None) -> list[dict[str, Any]]:
    """Every answered tool call, in order: the result's message id, the call, and its stored outcome."""
    registry = registry if registry is not None else build_registry(subagents=True)
    calls: dict[str, tuple[str, str]] = {}  # call id -> (tool name, arguments)
    found: list[dict[str, Any]] = []
    for record in records:
        if not isinstance(record, MessageRecord):
            continue
        message = record.message
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls[str(call.get("id"))] = (
                str(function.get("name") or ""),
                str(function.get("arguments") or ""),
            )
        if message.get("role") != "tool":
            continue
        name, arguments = calls.pop(str(message.get("tool_call_id")), ("", ""))
        meta = ToolMeta.from_json(record.meta)
        found.append(
            {
                "id": record.id,
                "call_id": message.get("tool_call_id"),
                "name": name,
                "call": _call_summary(registry, name, arguments),
                **meta.to_json(),
            }
        )
    return found


def format_tool_calls(calls: list[dict[str, Any]]) -> list[str]:
    if not calls:
        return []
    lines = ["", f"Tool calls ({len(calls)}):"]
    for call in calls:
        status = ToolStatus(call["status"])
        said = call.get("summary") or (status.label if status is not ToolStatus.OK else "")
        if status is ToolStatus.UNKNOWN:
            said = "status unknown (stored before results carried it)"
        head = f"  {call['id']} {MARKS.get(status, '✗')} {call['name'] or '(unknown tool)'}"
        lines.append(f"{head}  {call['call']}".rstrip() + (f" — {said}" if said else ""))
    return lines


def _call_summary(registry: ToolRegistry, name: str, arguments: str) -> str:
    tool = registry.get(name)
    try:
        args = json.loads(arguments) if arguments else {}
    except (ValueError, RecursionError):
        return ""
    if tool is None or not isinstance(args, dict):
        return ""
    return " ".join(tool.summary(args).split())[:120]
