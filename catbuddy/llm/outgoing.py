"""The messages as one provider is sent them: stored reasoning turned into that provider's field (or
dropped), thought signatures kept only where they are read, cache breakpoints where they are needed.

The stored history is never changed: every message that differs on the wire is a new dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from catbuddy.llm.cache_breakpoints import add_breakpoints
from catbuddy.llm.reasoning import (
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    REASONING_KEYS,
    reasoning_text,
)
from catbuddy.llm.reasoning_policy import ReasoningPolicy

EXTRA_CONTENT = "extra_content"


def _turn_start(messages: Sequence[Mapping[str, Any]]) -> int:
    """Index of the last user message: what follows it is the current turn's tool loop."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return -1


def _calls_without_extra(calls: Any) -> Any:
    if not isinstance(calls, list) or not any(isinstance(c, dict) and EXTRA_CONTENT in c for c in calls):
        return calls
    return [{k: v for k, v in c.items() if k != EXTRA_CONTENT} if isinstance(c, dict) else c for c in calls]


def wire_message(message: Mapping[str, Any], policy: ReasoningPolicy, *, in_turn: bool) -> dict[str, Any]:
    """One assistant message as ``policy``'s provider wants it (the same object when nothing changes)."""
    calls = message.get("tool_calls")
    bare_calls = calls if policy.extra_content else _calls_without_extra(calls)
    if not any(key in message for key in REASONING_KEYS) and bare_calls is calls:
        return message if isinstance(message, dict) else dict(message)
    wire = {k: v for k, v in message.items() if k not in REASONING_KEYS}
    if bare_calls is not calls:
        wire["tool_calls"] = bare_calls
    if not in_turn:
        return wire
    text = reasoning_text(message)
    details = message.get(REASONING_DETAILS)
    send = policy.send_reasoning
    if send == "echo":  # back in the field(s) it came in; plain `reasoning` text is never required
        if isinstance(details, list) and details:  # the items carry the text and any signature
            wire[REASONING_DETAILS] = details
        if isinstance(message.get(REASONING_CONTENT), str):
            wire[REASONING_CONTENT] = message[REASONING_CONTENT]
    elif send == "reasoning_content" and text:
        wire[REASONING_CONTENT] = text
    elif send == "reasoning_details":
        if isinstance(details, list) and details:
            wire[REASONING_DETAILS] = details
        elif text:
            wire[REASONING] = text
    return wire


def outgoing_messages(messages: Sequence[Mapping[str, Any]], policy: ReasoningPolicy) -> list[dict[str, Any]]:
    """The request's messages for ``policy``'s provider."""
    start = _turn_start(messages)
    out = [
        wire_message(m, policy, in_turn=i > start) if m.get("role") == "assistant" else m
        for i, m in enumerate(messages)
    ]
    wired: list[dict[str, Any]] = [m if isinstance(m, dict) else dict(m) for m in out]
    if policy.cache_breakpoints:
        wired = add_breakpoints(wired)
    return wired


def with_effort(body: dict[str, Any], policy: ReasoningPolicy) -> dict[str, Any]:
    """The request body with the model's reasoning effort, in the provider's field ("" sends none)."""
    if not policy.effort:
        return body
    if policy.effort_style == "reasoning":
        return {**body, "reasoning": {"effort": policy.effort}}
    return {**body, "reasoning_effort": policy.effort}


# Parameters catbuddy adds on its own; a provider that refuses one gets the request again without it.
OPTIONAL_PARAMS = {
    "reasoning_effort": 'reasoning_effort = "" under [model_options."{model}"] in config.toml',
    "reasoning": 'reasoning_effort = "" under [model_options."{model}"] in config.toml',
    "cache_control": 'cache_breakpoints = false under [model_options."{model}"] in config.toml',
    "thinking": 'reasoning_effort = "" under [model_options."{model}"] in config.toml',  # Anthropic's
}
REJECTED_STATUSES = (400, 422)


def _has_breakpoints(body: Mapping[str, Any]) -> bool:
    return any(
        isinstance(m.get("content"), list)
        and any(isinstance(p, dict) and "cache_control" in p for p in m["content"])
        for m in body.get("messages") or ()
    )


def without_rejected(
    body: dict[str, Any], exc: BaseException, dropped: set[str]
) -> tuple[dict[str, Any], str] | None:
    """(the body without the optional parameter the provider refused, the retry's reason), or None when
    ``exc`` is not such a refusal. Each parameter is dropped at most once (``dropped`` remembers)."""
    from catbuddy.llm.errors import server_message

    if getattr(exc, "status_code", None) not in REJECTED_STATUSES:
        return None
    said = server_message(exc).lower()
    for param, how in OPTIONAL_PARAMS.items():
        if param in dropped or param not in said:
            continue
        if param == "cache_control":
            if not _has_breakpoints(body):
                continue
            from catbuddy.llm.cache_breakpoints import strip_body_breakpoints

            new_body = strip_body_breakpoints(body)
        elif param in body:
            new_body = {k: v for k, v in body.items() if k != param}
        else:
            continue
        dropped.add(param)
        return (
            new_body,
            "`{model}` refused `" + param + "`: sent again without it (to stop sending it, set " + how + ")",
        )
    return None
