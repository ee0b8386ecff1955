"""Explicit prompt-cache breakpoints for Claude behind OpenAI-compatible endpoints.

Anthropic's models cache only up to a ``cache_control: {"type": "ephemeral"}`` marker (at most four
per request); OpenRouter, Vercel's gateway and others pass the markers on inside content parts. A
request is tools → system → messages, so the breakpoints are:

1. the system prompt (caches the tool schemas and the prompt: hit by every request of the session,
   also right after a compaction or a microcompaction batch rewrote the history);
2. the pinned summary message, when there is one (hit until the next compaction replaces it);
3. the end of the previous request: the last message before the newest assistant reply, where the
   previous request's breakpoint wrote — a read of everything the last call already paid for;
4. the last message: written now, read by the next request.

Breakpoints move forward as the history grows (3 and 4 follow its end); an assistant message with
only tool calls has no text to mark, so its nearest earlier message with text takes the mark.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
SUMMARY_PREFIX = "[Previous conversation summary]: "  # session.history.SUMMARY_PREFIX (a lower layer)


def _markable(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content)
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "text" for p in content)


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """A copy whose last text part carries the breakpoint (string content becomes one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]}
    parts = [dict(p) if isinstance(p, dict) else p for p in content or []]
    for part in reversed(parts):
        if isinstance(part, dict) and part.get("type") == "text":
            part["cache_control"] = dict(EPHEMERAL)
            break
    return {**message, "content": parts}


def _at_or_before(messages: list[dict[str, Any]], index: int, floor: int) -> int | None:
    while index > floor:
        if _markable(messages[index]):
            return index
        index -= 1
    return None


def breakpoint_indexes(messages: list[dict[str, Any]]) -> list[int]:
    """Where the breakpoints go (ascending, at most four)."""
    chosen: list[int] = []
    first = 0
    if messages and messages[0].get("role") == "system" and _markable(messages[0]):
        chosen.append(0)
        first = 1
    if (
        len(messages) > first
        and messages[first].get("role") == "user"
        and isinstance(messages[first].get("content"), str)
        and messages[first]["content"].startswith(SUMMARY_PREFIX)
    ):
        chosen.append(first)
    floor = chosen[-1] if chosen else -1
    last = _at_or_before(messages, len(messages) - 1, floor)
    newest_reply = next(
        (i for i in range(len(messages) - 1, floor, -1) if messages[i].get("role") == "assistant"), None
    )
    previous = _at_or_before(messages, newest_reply - 1, floor) if newest_reply is not None else None
    for index in (previous, last):
        if index is not None and index not in chosen:
            chosen.append(index)
    return sorted(chosen)[:MAX_BREAKPOINTS]


def add_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    marks = set(breakpoint_indexes(messages))
    return [_marked(m) if i in marks else m for i, m in enumerate(messages)]


def _bare(block: Any) -> Any:
    return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block


def strip_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without any ``cache_control`` (for a provider that refused them)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content):
            message = {**message, "content": [_bare(p) for p in content]}
        out.append(message)
    return out


def strip_body_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """A request body (OpenAI's or Anthropic's) without any ``cache_control``."""
    new = {**body, "messages": strip_breakpoints(list(body.get("messages") or []))}
    for key in ("system", "tools"):
        if isinstance(body.get(key), list):
            new[key] = [_bare(b) for b in body[key]]
    return new
