"""The shape a stored chat message must have to be sent again (see ``catbuddy.session.records``).

``message_problem`` says what is wrong with one message, or "" when nothing is: the reader skips and
reports a record whose message has a problem, so nothing of the wrong shape ever reaches a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _part_problem(index: int, part: Any) -> str:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return f"content[{index}] is not a content part (an object with a string `type`)"
    if part["type"] == "text" and not isinstance(part.get("text"), str):
        return f"content[{index}] is a text part without a string `text`"
    return ""


def _call_problem(index: int, call: Any) -> str:
    where = f"tool_calls[{index}]"
    if not isinstance(call, dict):
        return f"{where} is {_kind(call)}, not an object"
    if not isinstance(call.get("id"), str) or not call["id"]:
        return f"{where} has no string id"
    if call.get("type") != "function":
        return f"{where}.type is {call.get('type')!r}, not 'function'"
    function = call.get("function")
    if not isinstance(function, dict):
        return f"{where}.function is {_kind(function)}, not an object"
    if not isinstance(function.get("name"), str) or not function["name"]:
        return f"{where}.function has no string name"
    if not isinstance(function.get("arguments"), str):
        return f"{where}.function.arguments is {_kind(function.get('arguments'))}, not a string"
    return ""


def message_problem(message: Mapping[str, Any]) -> str:
    """What makes ``message`` not a valid OpenAI chat message ("" when it is one). See the module doc."""
    role = message.get("role")
    if role not in ROLES:
        return f"role {role!r} is not one of {', '.join(ROLES)}"
    content = message.get("content")
    if isinstance(content, list):
        problem = next((p for i, part in enumerate(content) if (p := _part_problem(i, part))), "")
        if problem:
            return problem
    elif content is not None and not isinstance(content, str):
        return f"content is {_kind(content)}, not a string, null or a list of parts"
    calls = message.get("tool_calls")
    if calls is not None:
        if role != "assistant":
            return f"a {role} message may not carry tool_calls"
        if not isinstance(calls, list):
            return f"tool_calls is {_kind(calls)}, not a list"
        problem = next((p for i, call in enumerate(calls) if (p := _call_problem(i, call))), "")
        if problem:
            return problem
        ids = [call["id"] for call in calls]
        if len(set(ids)) != len(ids):
            return "two tool calls share one id"
    if (content is None or content == []) and role != "assistant":
        return f"a {role} message needs content"
    if (content is None or content == []) and not calls:
        return "an assistant message with neither content nor tool calls"
    call_id = message.get("tool_call_id")
    if role == "tool" and (not isinstance(call_id, str) or not call_id):
        return "a tool message without a string tool_call_id"
    if role != "tool" and call_id is not None:
        return f"a {role} message may not carry a tool_call_id"
    if "name" in message and not isinstance(message["name"], str):
        return f"name is {_kind(message['name'])}, not a string"
    return ""
