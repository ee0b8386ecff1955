"""The scripted server's Anthropic Messages mode: a scripted reply as Messages SSE events or a Message.

``POST /v1/messages`` gets the same script as chat completions, answered the way Anthropic's API
answers (docs.claude.com, "Streaming messages"): ``message_start`` (with the usage of the prompt:
``input_tokens`` not read from or written to the cache, ``cache_read_input_tokens``,
``cache_creation_input_tokens``), one ``content_block_start``/``…_delta``/``…_stop`` group per block
(thinking with a signature, text, each tool_use with ``input_json_delta`` fragments), ``message_delta``
(stop reason, output tokens) and ``message_stop``. The request is measured as an OpenAI-shaped view of
it (``counting_view``), and the simulated cache is always the breakpoint cache: Anthropic caches only
where ``cache_control`` says.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from catbuddy.testing.script import ErrorSpec, ReplySpec

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               529: "overloaded_error"}  # fmt: skip
STOP_REASONS = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens"}


def counting_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as OpenAI-shaped messages and tools: what the server's token counter and its caches read
    (system first, as Anthropic lays a prompt out after the tools; blocks kept, so breakpoints show)."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": system})
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = [
                block
                if block.get("type") == "text"
                else {"type": "text", "text": json.dumps(block, ensure_ascii=False), **_mark(block)}
                for block in content
                if isinstance(block, Mapping)
            ]
        messages.append({"role": message.get("role"), "content": content})
    tools = [
        {"type": "function", "function": {"name": t.get("name"), "description": t.get("description", ""),
                                          "parameters": t.get("input_schema") or {}}, **_mark(t)}
        for t in body.get("tools") or []
    ]  # fmt: skip
    return {"model": body.get("model"), "messages": messages, "tools": tools}


def _mark(block: Mapping[str, Any]) -> dict[str, Any]:
    return {"cache_control": block["cache_control"]} if "cache_control" in block else {}


def signature(text: str) -> str:
    """A stand-in signature for a scripted thinking block (the real one is opaque too)."""
    return "sig-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _blocks(reply: ReplySpec, call_prefix: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.reasoning:
        blocks.append(
            {"type": "thinking", "thinking": reply.reasoning, "signature": signature(reply.reasoning)}
        )
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for number, call in enumerate(reply.tool_calls):
        blocks.append({"type": "tool_use", "id": call.id or f"toolu_{call_prefix}_{number}", "name": call.name,
                       "input": json.loads(call.arguments_json or "{}")})  # fmt: skip
    return blocks


def usage(prompt: int, read: int, written: int, output: int) -> dict[str, int]:
    return {"input_tokens": max(0, prompt - read - written), "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written, "output_tokens": output}  # fmt: skip


def message(reply: ReplySpec, model: str, message_id: str, tokens: dict[str, int]) -> dict[str, Any]:
    return {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": _blocks(reply, message_id), "stop_reason": STOP_REASONS.get(reply.resolved_finish_reason, "end_turn"),
        "stop_sequence": None, "usage": tokens,
    }  # fmt: skip


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))] or [""]


def stream_events(reply: ReplySpec, model: str, message_id: str, tokens: dict[str, int]) -> list[str]:
    """Every SSE event of the streamed reply, formatted (``event:`` and ``data:`` lines)."""
    start = {**message(reply, model, message_id, {**tokens, "output_tokens": 1}), "content": [],
             "stop_reason": None}  # fmt: skip
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(_blocks(reply, message_id)):
        kind = block["type"]
        empty = {"thinking": {"type": "thinking", "thinking": "", "signature": ""}, "text": {"type": "text", "text": ""},
                 "tool_use": {**block, "input": {}}}[kind]  # fmt: skip
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty})
        )
        if kind == "thinking":
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _pieces(block["thinking"], reply.chunk_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], reply.chunk_size)]
        else:
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw, reply.chunk_size)]
        for delta in deltas:
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = STOP_REASONS.get(reply.resolved_finish_reason, "end_turn")
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": tokens["output_tokens"]}}))  # fmt: skip
    events.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events]


def error_body(spec: ErrorSpec) -> dict[str, Any]:
    kind = ERROR_TYPES.get(spec.status, "api_error" if spec.status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": spec.message or kind}}


def too_long(prompt_tokens: int, window: int) -> ErrorSpec:
    return ErrorSpec(
        400, "invalid_request_error", None, f"prompt is too long: {prompt_tokens} tokens > {window} maximum"
    )
