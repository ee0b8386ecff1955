"""The OpenAI wire format the scripted server speaks: stream chunks, completions, error bodies.

Pure functions from a ``ReplySpec`` to JSON-ready dicts, so the shapes can be checked without HTTP.
The shapes follow what api.openai.com sends for ``/v1/chat/completions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catbuddy.testing.script import ErrorSpec, ReplySpec

# What OpenAI sends when a spec leaves type/code/message out.
DEFAULT_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", "unsupported_country_region_territory", "Access to this model is not allowed."),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    408: ("timeout", None, "Request timed out."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


@dataclass(frozen=True)
class StreamContext:
    completion_id: str
    model: str
    created: int
    call_id_prefix: str  # tool call ids are "<prefix>_<n>", unique per request


def call_ids(reply: ReplySpec, prefix: str) -> list[str | None]:
    """Each call's id as sent: given, or "<prefix>_<n>"; broken on purpose by ``tool_call_ids``
    ("missing": no id at all, "empty": "", "duplicate": every call has the first one's)."""
    ids: list[str | None] = [call.id or f"{prefix}_{i}" for i, call in enumerate(reply.tool_calls)]
    if reply.tool_call_ids == "missing":
        return [None] * len(ids)
    if reply.tool_call_ids == "empty":
        return [""] * len(ids)
    if reply.tool_call_ids == "duplicate":
        return ids[:1] * len(ids)
    return ids


def _with_id(call: dict[str, Any], call_id: str | None) -> dict[str, Any]:
    return call if call_id is None else {"id": call_id, **call}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _chunk(
    ctx: StreamContext, delta: dict[str, Any], finish: str | None, usage_field: bool
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": ctx.completion_id,
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage_field:  # with include_usage, OpenAI puts "usage": null on every chunk but the last
        chunk["usage"] = None
    return chunk


def _tool_call_deltas(reply: ReplySpec, ids: list[str | None]) -> list[dict[str, Any]]:
    """Per call: a head (index, id, type, name, empty arguments), then argument fragments."""
    per_call: list[list[dict[str, Any]]] = []
    for index, (call, call_id) in enumerate(zip(reply.tool_calls, ids, strict=True)):
        head = {"index": index, **_with_id({"type": "function"}, call_id)}
        head["function"] = {"name": call.name, "arguments": ""}
        fragments = [
            {"index": index, "function": {"arguments": piece}}
            for piece in _pieces(call.arguments_json, reply.chunk_size)
        ]
        per_call.append([head, *fragments])
    if not reply.interleave_tool_calls:  # OpenAI streams one call completely, then the next
        return [delta for deltas in per_call for delta in deltas]
    mixed: list[dict[str, Any]] = []
    for round_no in range(max((len(d) for d in per_call), default=0)):
        mixed.extend(deltas[round_no] for deltas in per_call if round_no < len(deltas))
    return mixed


def stream_chunks(
    reply: ReplySpec, ctx: StreamContext, *, include_usage: bool, usage: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every ``chat.completion.chunk`` of a streamed reply, in order (``[DONE]`` not included)."""
    if reply.no_choices:  # what some proxies send when the upstream failed: usage, or nothing, no choices
        final = _chunk(ctx, {}, None, False)
        final["choices"] = []
        if include_usage:
            final["usage"] = usage
        return [final]
    chunks = [_chunk(ctx, {"role": "assistant", "content": "", "refusal": None}, None, include_usage)]
    if reply.empty:
        chunks.append(_chunk(ctx, {}, reply.finish_reason or "stop", include_usage))
        if include_usage:
            final = _chunk(ctx, {}, None, False)
            final["choices"] = []
            final["usage"] = usage
            chunks.append(final)
        return chunks
    text = reply.text
    if reply.reasoning and reply.reasoning_field == "think":
        text = f"<think>{reply.reasoning}</think>\n\n{text}"
    elif reply.reasoning:
        for piece in _pieces(reply.reasoning, reply.chunk_size):
            chunks.append(_chunk(ctx, {reply.reasoning_field: piece}, None, include_usage))
    for piece in _pieces(text, reply.chunk_size):
        chunks.append(_chunk(ctx, {"content": piece}, None, include_usage))
    for delta in _tool_call_deltas(reply, call_ids(reply, ctx.call_id_prefix)):
        chunks.append(_chunk(ctx, {"tool_calls": [delta]}, None, include_usage))
    chunks.append(_chunk(ctx, {}, reply.resolved_finish_reason, include_usage))
    if include_usage:
        final = _chunk(ctx, {}, None, False)
        final["choices"] = []
        final["usage"] = usage
        chunks.append(final)
    return chunks


def completion(reply: ReplySpec, ctx: StreamContext, *, usage: dict[str, Any]) -> dict[str, Any]:
    """A non-streamed ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
    if reply.reasoning and reply.reasoning_field != "think":
        message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls and not reply.empty:
        message["tool_calls"] = [
            _with_id(
                {"type": "function", "function": {"name": call.name, "arguments": call.arguments_json}},
                call_id,
            )
            for call, call_id in zip(reply.tool_calls, call_ids(reply, ctx.call_id_prefix), strict=True)
        ]
    if reply.empty:
        message["content"] = None
    choices = [
        {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.resolved_finish_reason}
    ]
    return {
        "id": ctx.completion_id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "system_fingerprint": None,
        "choices": [] if reply.no_choices else choices,
        "usage": usage,
    }


def usage_dict(
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int = 0,
    cache_report: str = "openai",
    cache_write_tokens: int = 0,
) -> dict[str, Any]:
    """A usage object as the provider family ``cache_report`` names writes it: OpenAI's
    ``prompt_tokens_details.cached_tokens`` or DeepSeek's ``prompt_cache_hit_tokens``/``…miss_tokens``."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cache_report == "openai":
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    elif cache_report == "anthropic":  # as OpenRouter reports Claude's cache
        usage["prompt_tokens_details"] = {
            "cached_tokens": cached_tokens,
            "cache_write_tokens": cache_write_tokens,
        }
    elif cache_report == "deepseek":
        usage["prompt_cache_hit_tokens"] = cached_tokens
        usage["prompt_cache_miss_tokens"] = prompt_tokens - cached_tokens
    return usage


def error_body(spec: ErrorSpec) -> dict[str, Any]:
    kind, code, message = DEFAULT_ERRORS.get(spec.status, DEFAULT_ERRORS[500 if spec.status >= 500 else 400])
    return {
        "error": {
            "message": spec.message or message,
            "type": spec.type or kind,
            "param": spec.param,
            "code": spec.code if spec.code is not None else code,
        }
    }


def error_headers(spec: ErrorSpec) -> dict[str, str]:
    if spec.retry_after is None:
        return {}
    # OpenAI sends whole seconds in Retry-After; retry-after-ms carries the precise value.
    seconds = max(0, round(spec.retry_after))
    return {"Retry-After": str(seconds), "retry-after-ms": str(int(spec.retry_after * 1000))}
