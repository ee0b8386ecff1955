"""Bounds on one model reply, applied before it is stored: how many calls, how large their arguments.

A reply with 10,000 tool calls, or an 8 MB argument, would otherwise run for minutes and be re-sent on
every later request. The reply is stored with oversized arguments cut (still valid JSON, marked), and
the calls over a bound are answered with an error instead of being run (docs/architecture.md §5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from catbuddy.config import ToolSettings

ARGUMENT_HEAD_CHARS = 2_000  # what an oversized argument keeps, so the model sees what it sent


@dataclass
class BoundedReply:
    message: dict[str, Any]  # what is stored and shown
    refusals: dict[str, str] = field(default_factory=dict)  # call id -> the result the model gets instead
    over_count: int = 0  # calls past max_calls_per_reply (answered quietly: one notice, not one event each)


def bound_reply(message: dict[str, Any], tools: ToolSettings) -> BoundedReply:
    calls = message.get("tool_calls")
    if not calls:
        return BoundedReply(message)
    refusals: dict[str, str] = {}
    bounded_calls: list[dict[str, Any]] = []
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        size = len(arguments.encode("utf-8", "replace")) if isinstance(arguments, str) else 0
        if isinstance(arguments, str) and size > tools.max_argument_bytes:
            call = {**call, "function": {**function, "arguments": _cut_arguments(arguments, size)}}
            refusals[call["id"]] = (
                f"Error: not run: the arguments are {size:,} bytes, over the limit of "
                f"{tools.max_argument_bytes:,} (tools.max_argument_bytes). Send smaller pieces, e.g. "
                "write a file in parts with edit_file."
            )
        elif index >= tools.max_calls_per_reply:
            refusals[call["id"]] = (
                f"Error: not run: too many calls in one reply ({len(calls):,}; at most "
                f"{tools.max_calls_per_reply} run, tools.max_calls_per_reply). Ask for the rest in the next reply."
            )
        bounded_calls.append(call)
    if not refusals:
        return BoundedReply(message)
    over = max(0, len(calls) - tools.max_calls_per_reply)
    return BoundedReply({**message, "tool_calls": bounded_calls}, refusals, over)


def _cut_arguments(arguments: str, size: int) -> str:
    return json.dumps(
        {
            "catbuddy_cut": f"{size:,} bytes of arguments cut: over tools.max_argument_bytes",
            "head": arguments[:ARGUMENT_HEAD_CHARS],
        },
        ensure_ascii=False,
    )
