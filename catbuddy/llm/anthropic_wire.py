"""catbuddy's OpenAI-format history as an Anthropic Messages request, and a streamed Message back.

Pure data, no SDK: the provider (``anthropic_provider``) sends what ``request_body`` builds and feeds
the stream's events to ``MessageAssembler``.

- The system prompt and the tool schemas are cached blocks (``cache_control`` on the system prompt's
  block and on the last tool), and so are the end of the previous request and the last message, as
  for Claude behind a gateway (``cache_breakpoints``): four breakpoints at most.
- Tool results become ``tool_result`` blocks in a user message; consecutive messages of one role are
  merged (the API wants user and assistant to alternate).
- A stored thinking block (``reasoning_details`` items of format ``anthropic-claude-v1``, the shape
  OpenRouter uses for the same blocks) goes back with its signature on the current turn's assistant
  messages, as the API requires for a tool loop with thinking; earlier turns' thinking is not sent
  (the API would drop it anyway).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catbuddy.llm.reasoning import REASONING_DETAILS
from catbuddy.messages import content_text

EPHEMERAL = {"type": "ephemeral"}
CLAUDE_FORMAT = "anthropic-claude-v1"
# reasoning_effort → thinking budget (tokens); the budget stays below max_tokens.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
MIN_ANSWER_TOKENS = 1024  # what a thinking budget leaves for the answer at least
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                "refusal": "content_filter", "pause_turn": "stop"}  # fmt: skip


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [_text_block(content)] if content else []
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text" and part.get("text"):
                out.append(_text_block(str(part["text"])))
            elif isinstance(part, Mapping) and part.get("type") == "image_url":
                continue  # catbuddy sends no images; never fail on one
        return out
    text = content_text(content)
    return [_text_block(text)] if text else []


def thinking_blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stored thinking blocks of an assistant message, as the API wants them back."""
    out = []
    for item in message.get(REASONING_DETAILS) or ():
        if not isinstance(item, Mapping) or item.get("format") not in (CLAUDE_FORMAT, None):
            continue
        if item.get("type") == "reasoning.text" and item.get("signature"):
            out.append(
                {"type": "thinking", "thinking": str(item.get("text") or ""), "signature": item["signature"]}
            )
        elif item.get("type") == "reasoning.encrypted" and item.get("data"):
            out.append({"type": "redacted_thinking", "data": item["data"]})
    return out


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {"_raw_arguments": raw}  # the model wrote broken JSON; keep it visible to it
    return value if isinstance(value, dict) else {"value": value}


def _assistant_blocks(message: Mapping[str, Any], in_turn: bool) -> list[dict[str, Any]]:
    blocks = thinking_blocks(message) if in_turn else []
    blocks += _blocks(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        blocks.append(
            {"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
             "input": _arguments(function.get("arguments"))}
        )  # fmt: skip
    return blocks


def convert_messages(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) of an Anthropic request for OpenAI-format ``messages``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "system":
            system += _blocks(message.get("content"))
            continue
        if role == "tool":
            role, blocks = "user", [
                {"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                 "content": content_text(message.get("content")) or "(no output)"}
            ]  # fmt: skip
        elif role == "assistant":
            blocks = _assistant_blocks(message, in_turn=index > last_user)
        else:
            role, blocks = "user", _blocks(message.get("content"))
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            if role == "user":  # tool results first, then text: the API reads results before new words
                merged = out[-1]["content"] + blocks
                out[-1]["content"] = [b for b in merged if b["type"] == "tool_result"] + [
                    b for b in merged if b["type"] != "tool_result"
                ]
            else:
                out[-1]["content"] = out[-1]["content"] + blocks
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def convert_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    out = []
    for tool in tools or ():
        function = tool.get("function") or tool
        out.append(
            {"name": function.get("name"), "description": function.get("description") or "",
             "input_schema": function.get("parameters") or {"type": "object", "properties": {}}}
        )  # fmt: skip
    return out


def _mark_last_block(message: dict[str, Any]) -> None:
    blocks = [dict(b) for b in message["content"]]
    for block in reversed(blocks):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            block["cache_control"] = dict(EPHEMERAL)
            break
    message["content"] = blocks


def add_cache_control(
    system: list[dict[str, Any]], tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> None:
    """System prompt, tools, previous request's end and the last message: four breakpoints."""
    if system:
        system[-1] = {**system[-1], "cache_control": dict(EPHEMERAL)}
    if tools:
        tools[-1] = {**tools[-1], "cache_control": dict(EPHEMERAL)}
    marks = []
    if messages:
        marks.append(len(messages) - 1)
        newest_reply = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), None
        )
        if newest_reply is not None and newest_reply > 0:
            marks.append(newest_reply - 1)
    budget = 4 - bool(system) - bool(tools)
    for index in sorted(set(marks), reverse=True)[: max(0, budget)]:
        _mark_last_block(messages[index])


def thinking_budget(effort: str, max_tokens: int) -> int | None:
    budget = THINKING_BUDGETS.get(effort)
    if budget is None:
        return None
    budget = min(budget, max_tokens - MIN_ANSWER_TOKENS)
    return budget if budget >= 1024 else None  # the API's minimum budget


def request_body(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    max_tokens: int,
    effort: str = "",
    cache: bool = True,
    tool_choice: str | None = None,
) -> dict[str, Any]:
    system, converted = convert_messages(messages)
    schemas = convert_tools(tools)
    if cache:
        add_cache_control(system, schemas, converted)
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": converted}
    if system:
        body["system"] = system
    if schemas:
        body["tools"] = schemas
        if tool_choice == "none":
            body["tool_choice"] = {"type": "none"}
    budget = thinking_budget(effort, max_tokens)
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return body


@dataclass
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""
    id: str = ""
    name: str = ""


@dataclass
class MessageAssembler:
    """Feeds on the Messages stream's events (as plain dicts); ``blocks`` in order, usage, stop reason."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    model: str | None = None
    stop_reason: str | None = None
    input_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    events: int = 0

    def feed(self, event: Mapping[str, Any]) -> tuple[str, str, int | None]:
        """(kind, text, block index) of what to show: kind "text", "reasoning", "tool" or ""."""
        self.events += 1
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.model = message.get("model") or self.model
            self._usage(message.get("usage") or {})
        elif kind == "content_block_start":
            index, block = int(event.get("index") or 0), event.get("content_block") or {}
            self.blocks[index] = _Block(
                type=str(block.get("type")), id=str(block.get("id") or ""), name=str(block.get("name") or ""),
                data=str(block.get("data") or ""), signature=str(block.get("signature") or ""),
            )  # fmt: skip
            if block.get("text"):
                self.blocks[index].text.append(block["text"])
                return "text", block["text"], index
            if block.get("type") == "tool_use":
                return "tool", "", index
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index") or 0), event.get("delta") or {})
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            self.stop_reason = delta.get("stop_reason") or self.stop_reason
            self._usage(event.get("usage") or {})
        return "", "", None

    def _delta(self, index: int, delta: Mapping[str, Any]) -> tuple[str, str, int | None]:
        block = self.blocks.setdefault(index, _Block(type="text"))
        kind = delta.get("type")
        if kind == "text_delta":
            block.text.append(str(delta.get("text") or ""))
            return "text", str(delta.get("text") or ""), index
        if kind == "thinking_delta":
            block.text.append(str(delta.get("thinking") or ""))
            return "reasoning", str(delta.get("thinking") or ""), index
        if kind == "signature_delta":
            block.signature += str(delta.get("signature") or "")
        elif kind == "input_json_delta":
            block.text.append(str(delta.get("partial_json") or ""))
            return "tool", "", index
        return "", "", None  # citations and other deltas: nothing catbuddy shows

    def _usage(self, usage: Mapping[str, Any]) -> None:
        def value(name: str, current: int) -> int:
            got = usage.get(name)
            return got if isinstance(got, int) and got >= 0 else current

        self.input_tokens = value("input_tokens", self.input_tokens)
        self.cache_read = value("cache_read_input_tokens", self.cache_read)
        self.cache_write = value("cache_creation_input_tokens", self.cache_write)
        self.output_tokens = value("output_tokens", self.output_tokens)

    def tool_chars(self, index: int) -> int:
        return sum(len(t) for t in self.blocks[index].text)

    @property
    def text(self) -> str:
        return "".join("".join(b.text) for _, b in sorted(self.blocks.items()) if b.type == "text")

    @property
    def reasoning(self) -> str:
        return "".join("".join(b.text) for _, b in sorted(self.blocks.items()) if b.type == "thinking")

    def details(self) -> list[dict[str, Any]]:
        """Thinking blocks as ``reasoning_details`` items (OpenRouter's shape for the same blocks)."""
        out: list[dict[str, Any]] = []
        for index, block in sorted(self.blocks.items()):
            if block.type == "thinking":
                item = {"type": "reasoning.text", "text": "".join(block.text), "format": CLAUDE_FORMAT}
                if block.signature:
                    item["signature"] = block.signature
                out.append({**item, "index": index})
            elif block.type == "redacted_thinking":
                out.append(
                    {
                        "type": "reasoning.encrypted",
                        "data": block.data,
                        "format": CLAUDE_FORMAT,
                        "index": index,
                    }
                )
        return out

    def tool_calls(self) -> list[tuple[str, str, str]]:
        """(id, name, arguments JSON) of each tool_use block."""
        return [
            (b.id, b.name, "".join(b.text) or "{}")
            for _, b in sorted(self.blocks.items())
            if b.type == "tool_use"
        ]

    @property
    def finish_reason(self) -> str | None:
        return STOP_REASONS.get(self.stop_reason or "", self.stop_reason)
