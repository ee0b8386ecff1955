"""Reply specs for the scripted LLM server: the dataclasses, readable constructors, and the JSON form.

A script is a list of replies, one per chat request. Each reply is a ``ReplySpec`` or a *responder*,
a callable ``(request_json) -> ReplySpec`` that decides from the request. The JSON form is described
in ``catbuddy.testing.scripted_llm``'s docstring; ``load_script`` reads it and names any problem.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.errors import CatbuddyError
from catbuddy.messages import content_text, strip_runtime_block

DEFAULT_CHUNK_SIZE = 8
DEFAULT_MODEL = "scripted"  # the model name the scripted server answers to by default
EXHAUSTED_MODES = ("echo", "error")
SUMMARY_MODES = ("script", "short")  # a compaction's summary request: the next reply, or a short summary
# How catbuddy's compaction prompt (templates/compact.md.j2) begins: it marks a summary request.
SUMMARY_MARKER = "You are compacting the history of a long coding session"
SHORT_SUMMARY_QUOTE_CHARS = 80
# What a malformed chunk carries unless the reply says otherwise: JSON cut off in the middle.
MALFORMED_DATA = '{"id": "chatcmpl-broken", "object": "chat.completion.chunk", "choices": [{"delta": {"cont'
TOOL_CALL_ID_FAULTS = ("missing", "empty", "duplicate")


class ScriptError(CatbuddyError, ValueError):
    """A script (file or Python list) is malformed. The message says where and what was expected."""


@dataclass(frozen=True)
class ToolCallSpec:
    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)  # a raw string is sent as is
    id: str | None = None  # generated ("call_<n>") when not given

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class ErrorSpec:
    """An HTTP error with an OpenAI error body: ``{"error": {"message", "type", "param", "code"}}``."""

    status: int = 500
    type: str | None = None  # default chosen from the status, as OpenAI does
    code: str | None = None
    message: str = ""
    param: str | None = None
    retry_after: float | None = None  # seconds, sent as Retry-After (and retry-after-ms)


@dataclass(frozen=True)
class ReplySpec:
    text: str = ""
    reasoning: str = ""  # streamed before the text, in ``reasoning_field`` (the answer never holds it)
    reasoning_field: str = "reasoning_content"  # or "reasoning", or "think" (<think>…</think> in content)
    tool_calls: tuple[ToolCallSpec, ...] = ()
    finish_reason: str | None = None  # default: "tool_calls" when there are calls, else "stop"
    chunk_size: int = DEFAULT_CHUNK_SIZE  # characters of text / arguments per streamed delta
    delay: float = 0.0  # seconds to sleep before each streamed chunk (slow streams)
    error: ErrorSpec | None = None
    interleave_tool_calls: bool = False  # mix argument fragments of parallel calls (some servers do)
    disconnect_after: int | None = None  # drop the connection after this many chunks (broken streams)
    # Faults a real server or proxy produces (see the scripted_llm docstring):
    malformed_after: int | None = None  # one chunk that is not JSON after this many good ones (0: first)
    malformed_data: str = MALFORMED_DATA  # what that chunk's `data:` line carries
    stall_after: int | None = None  # go silent after this many chunks (0: never answer at all)
    stall_keepalive: float | None = None  # while stalled, an SSE comment every so many seconds
    no_choices: bool = False  # a 200 whose chunks (or completion) have no choices
    empty: bool = False  # a completion with no text and no tool calls
    no_events: bool = False  # a 200 stream that ends without a single event (unstreamed: empty body)
    tool_call_ids: str | None = None  # "missing", "empty" or "duplicate": broken ids on the calls

    @property
    def is_fault(self) -> bool:
        """A reply that is only a fault needs no text or calls."""
        return (
            self.malformed_after is not None
            or self.stall_after is not None
            or self.no_choices
            or self.empty
            or self.no_events
        )

    @property
    def resolved_finish_reason(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls and not self.empty else "stop"


Responder = Callable[[dict[str, Any]], ReplySpec]
ScriptItem = ReplySpec | Responder


class Reply:
    """Readable constructors for tests: ``Reply.text("hi")``, ``Reply.tool_call(...)``, ``Reply.error(429)``."""

    @staticmethod
    def text(text: str, *, chunk_size: int = DEFAULT_CHUNK_SIZE, delay: float = 0.0, **kw: Any) -> ReplySpec:
        return ReplySpec(text=text, chunk_size=chunk_size, delay=delay, **kw)

    @staticmethod
    def tool_call(
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        id: str | None = None,
        text: str = "",
        **kw: Any,
    ) -> ReplySpec:
        call = ToolCallSpec(name=name, arguments={} if arguments is None else arguments, id=id)
        return ReplySpec(text=text, tool_calls=(call,), **kw)

    @staticmethod
    def tool_calls(
        *calls: ToolCallSpec | tuple[str, Mapping[str, Any] | str], text: str = "", **kw: Any
    ) -> ReplySpec:
        specs = tuple(
            c if isinstance(c, ToolCallSpec) else ToolCallSpec(name=c[0], arguments=c[1]) for c in calls
        )
        return ReplySpec(text=text, tool_calls=specs, **kw)

    @staticmethod
    def error(
        status: int = 500,
        message: str = "",
        *,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        retry_after: float | None = None,
    ) -> ReplySpec:
        return ReplySpec(error=ErrorSpec(status, type, code, message, param, retry_after))

    # --- faults -------------------------------------------------------------------------------

    @staticmethod
    def malformed(after: int = 0, data: str = MALFORMED_DATA, *, text: str = "", **kw: Any) -> ReplySpec:
        """A chunk that is not JSON (or ``data``: any raw line) after ``after`` good chunks of ``text``."""
        return ReplySpec(text=text, malformed_after=after, malformed_data=data, **kw)

    @staticmethod
    def stall(after: int = 0, *, text: str = "", keepalive: float | None = None, **kw: Any) -> ReplySpec:
        """Go silent after ``after`` chunks (0: accept the request and never answer), until the client
        gives up or the server closes. With ``keepalive`` (streams), send an SSE comment that often
        instead of nothing: bytes flow, but no event ever comes (the headers go out first)."""
        return ReplySpec(text=text, stall_after=after, stall_keepalive=keepalive, **kw)

    @staticmethod
    def no_choices(**kw: Any) -> ReplySpec:
        """A 200 with no choices (only a usage chunk when streaming)."""
        return ReplySpec(no_choices=True, **kw)

    @staticmethod
    def empty(**kw: Any) -> ReplySpec:
        """A completion with no text and no tool calls (finish_reason "stop" unless told)."""
        return ReplySpec(empty=True, **kw)

    @staticmethod
    def no_events(**kw: Any) -> ReplySpec:
        """A 200 stream that ends at once, without a single event or [DONE] (unstreamed: an empty body)."""
        return ReplySpec(no_events=True, **kw)

    @staticmethod
    def context_length_exceeded(message: str = "") -> ReplySpec:
        text = message or "This model's maximum context length has been exceeded. Please reduce the length."
        return Reply.error(400, text, code="context_length_exceeded", param="messages")

    @staticmethod
    def echo(request: dict[str, Any]) -> ReplySpec:
        """A responder that repeats the last user message: the default once a script runs out."""
        return ReplySpec(text=f"Echo: {last_user_text(request)}")


def is_summary_request(request: Mapping[str, Any]) -> bool:
    """Whether a chat request is catbuddy asking for a compaction summary (either way it asks)."""
    return any(
        isinstance(m, Mapping) and content_text(m.get("content")).lstrip().startswith(SUMMARY_MARKER)
        for m in request.get("messages") or []
    )


def short_summary(request: Mapping[str, Any]) -> ReplySpec:
    """A summary far shorter than any history worth folding, in the sections the prompt asks for, so
    a keyless demo can show a compaction that saves tokens (an echo would be longer than its input)."""
    users = [
        strip_runtime_block(content_text(m.get("content"))).strip()
        for m in request.get("messages") or []
        if isinstance(m, Mapping)
        and m.get("role") == "user"
        and not content_text(m.get("content")).lstrip().startswith(SUMMARY_MARKER)
    ]
    latest = " ".join(users[-1].split()) if users else ""
    if len(latest) > SHORT_SUMMARY_QUOTE_CHARS:
        latest = latest[: SHORT_SUMMARY_QUOTE_CHARS - 1] + "…"
    text = (
        "## Goal\nTry catbuddy's keyless demo and watch its context engineering.\n\n"
        "## Rules and preferences\nnone\n\n"
        "## Decisions\nA scripted model answers; this summary is scripted too.\n\n"
        f'## State of the work\nThe user looked around the demo project; last said: "{latest}".\n\n'
        "## Open questions\nnone\n\n"
        "## Next step\nKeep chatting; /context shows the summary in force."
    )
    return ReplySpec(text=text)


def last_user_text(request: Mapping[str, Any]) -> str:
    for message in reversed(request.get("messages") or []):
        if isinstance(message, Mapping) and message.get("role") == "user":
            # catbuddy's volatile runtime block is left out, so echoed demos read well
            return strip_runtime_block(content_text(message.get("content"))).strip()
    return "(no user message)"


# --- the JSON form -------------------------------------------------------------------------------

REASONING_FIELDS = ("reasoning_content", "reasoning", "think")
REPLY_KEYS = {
    "text": str,
    "reasoning": str,
    "reasoning_field": str,
    "tool_calls": list,
    "finish_reason": str,
    "chunk_size": int,
    "delay": (int, float),
    "error": dict,
    "interleave_tool_calls": bool,
    "disconnect_after": int,
    "malformed_after": int,
    "malformed_data": str,
    "stall_after": int,
    "stall_keepalive": (int, float),
    "no_choices": bool,
    "empty": bool,
    "no_events": bool,
    "tool_call_ids": str,
}
TOOL_CALL_KEYS = {"id": str, "name": str, "arguments": (dict, str)}
ERROR_KEYS = {
    "status": int,
    "type": str,
    "code": str,
    "message": str,
    "param": str,
    "retry_after": (int, float),
}
SCRIPT_KEYS = (
    "replies",
    "exhausted",
    "summaries",
    "context_window",
    "prompt_token_factor",
    "api_key",
    "models",
)


@dataclass
class ScriptFile:
    """A parsed script file: the replies and the server options it may carry."""

    replies: list[ReplySpec]
    options: dict[str, Any] = field(default_factory=dict)


def _check_keys(where: str, data: Any, schema: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ScriptError(f"{where}: expected a JSON object, got {type(data).__name__}")
    for key, value in data.items():
        if key not in schema:
            raise ScriptError(f"{where}: unknown key {key!r}; allowed keys: {', '.join(schema)}")
        expected = schema[key]
        if isinstance(value, bool) and expected is not bool and bool not in _as_tuple(expected):
            raise ScriptError(f"{where}.{key}: expected {_type_names(expected)}, got a boolean")
        if not isinstance(value, expected):
            raise ScriptError(f"{where}.{key}: expected {_type_names(expected)}, got {type(value).__name__}")
    return data


def _as_tuple(expected: Any) -> tuple[type, ...]:
    return expected if isinstance(expected, tuple) else (expected,)


def _type_names(expected: Any) -> str:
    names = {
        "str": "a string",
        "int": "an integer",
        "float": "a number",
        "dict": "an object",
        "list": "a list",
    }
    names["bool"] = "true or false"
    return " or ".join(names.get(t.__name__, t.__name__) for t in _as_tuple(expected))


def reply_from_json(data: Any, where: str = "reply") -> ReplySpec:
    """One reply from its JSON form; a bare string is a text reply."""
    if isinstance(data, str):
        return ReplySpec(text=data)
    data = _check_keys(where, data, REPLY_KEYS)
    calls = []
    for i, raw in enumerate(data.get("tool_calls", [])):
        call = _check_keys(f"{where}.tool_calls[{i}]", raw, TOOL_CALL_KEYS)
        if not call.get("name"):
            raise ScriptError(f"{where}.tool_calls[{i}]: `name` is required (the tool to call)")
        calls.append(ToolCallSpec(name=call["name"], arguments=call.get("arguments", {}), id=call.get("id")))
    error = None
    if "error" in data:
        raw_error = _check_keys(f"{where}.error", data["error"], ERROR_KEYS)
        status = raw_error.get("status", 500)
        if not 400 <= status <= 599:
            raise ScriptError(f"{where}.error.status: expected an HTTP error status 400-599, got {status}")
        error = ErrorSpec(**raw_error)
    chunk_size = data.get("chunk_size", DEFAULT_CHUNK_SIZE)
    if chunk_size < 1:
        raise ScriptError(f"{where}.chunk_size: expected an integer ≥ 1, got {chunk_size}")
    if data.get("delay", 0) < 0:
        raise ScriptError(f"{where}.delay: expected a number ≥ 0 (seconds), got {data['delay']}")
    for key in ("disconnect_after", "malformed_after", "stall_after"):
        if data.get(key, 0) < 0:
            raise ScriptError(f"{where}.{key}: expected a chunk count ≥ 0, got {data[key]}")
    if data.get("stall_keepalive", 1) <= 0:
        raise ScriptError(f"{where}.stall_keepalive: expected a number of seconds > 0")
    if data.get("tool_call_ids", "missing") not in TOOL_CALL_ID_FAULTS:
        raise ScriptError(f"{where}.tool_call_ids: expected one of {', '.join(TOOL_CALL_ID_FAULTS)}")
    fault = any(data.get(k) is not None for k in ("malformed_after", "stall_after")) or any(
        data.get(k) for k in ("no_choices", "empty", "no_events")
    )
    if data.get("reasoning_field", "reasoning_content") not in REASONING_FIELDS:
        raise ScriptError(f"{where}.reasoning_field: expected one of {', '.join(REASONING_FIELDS)}")
    if not data.get("text") and not calls and error is None and not fault and not data.get("reasoning"):
        raise ScriptError(
            f"{where}: a reply needs `text`, `tool_calls` or `error` "
            "(or a fault: `empty`, `no_choices`, `no_events`, `stall_after`, `malformed_after`)"
        )
    return ReplySpec(
        text=data.get("text", ""),
        reasoning=data.get("reasoning", ""),
        reasoning_field=data.get("reasoning_field", "reasoning_content"),
        tool_calls=tuple(calls),
        finish_reason=data.get("finish_reason"),
        chunk_size=chunk_size,
        delay=float(data.get("delay", 0.0)),
        error=error,
        interleave_tool_calls=data.get("interleave_tool_calls", False),
        disconnect_after=data.get("disconnect_after"),
        malformed_after=data.get("malformed_after"),
        malformed_data=data.get("malformed_data", MALFORMED_DATA),
        stall_after=data.get("stall_after"),
        stall_keepalive=float(data["stall_keepalive"]) if "stall_keepalive" in data else None,
        no_choices=data.get("no_choices", False),
        empty=data.get("empty", False),
        no_events=data.get("no_events", False),
        tool_call_ids=data.get("tool_call_ids"),
    )


def script_from_json(data: Any, source: str = "script") -> ScriptFile:
    """A script is a list of replies, or an object with ``replies`` and server options."""
    options: dict[str, Any] = {}
    if isinstance(data, dict):
        unknown = [k for k in data if k not in SCRIPT_KEYS]
        if unknown:
            raise ScriptError(f"{source}: unknown key {unknown[0]!r}; allowed keys: {', '.join(SCRIPT_KEYS)}")
        if "replies" not in data:
            raise ScriptError(f"{source}: an object script needs a `replies` list")
        options = {k: v for k, v in data.items() if k != "replies"}
        _check_options(source, options)
        data = data["replies"]
    if not isinstance(data, list):
        raise ScriptError(f"{source}: expected a list of replies (or an object with `replies`)")
    replies = [reply_from_json(item, f"{source}: reply #{i + 1}") for i, item in enumerate(data)]
    return ScriptFile(replies, options)


def _check_options(source: str, options: dict[str, Any]) -> None:
    if options.get("exhausted", "echo") not in EXHAUSTED_MODES:
        raise ScriptError(f"{source}: `exhausted` must be one of {', '.join(EXHAUSTED_MODES)}")
    if options.get("summaries", "script") not in SUMMARY_MODES:
        raise ScriptError(f"{source}: `summaries` must be one of {', '.join(SUMMARY_MODES)}")
    window = options.get("context_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ScriptError(f"{source}: `context_window` must be a positive integer, got {window!r}")
    factor = options.get("prompt_token_factor", 1.0)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or factor <= 0:
        raise ScriptError(f"{source}: `prompt_token_factor` must be a positive number, got {factor!r}")
    if "api_key" in options and not isinstance(options["api_key"], str):
        raise ScriptError(f"{source}: `api_key` must be a string")
    models = options.get("models")
    if models is not None and (not isinstance(models, list) or not all(isinstance(m, str) for m in models)):
        raise ScriptError(f"{source}: `models` must be a list of model names")
    if not isinstance(options.get("prefix_cache", True), bool):
        raise ScriptError(f"{source}: `prefix_cache` must be true or false")
    if options.get("cache_report", "openai") not in ("openai", "deepseek", "none"):
        raise ScriptError(f"{source}: `cache_report` must be one of openai, deepseek, none")


def load_script(path: str | Path) -> ScriptFile:
    """Read a JSON script file; every problem is reported as a ScriptError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"{path}: cannot read the script file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return script_from_json(data, str(path))


def as_script(items: Sequence[ScriptItem | Mapping[str, Any] | str]) -> list[ScriptItem]:
    """Accept ReplySpecs, responders, or JSON-form dicts/strings, so tests can mix them."""
    script: list[ScriptItem] = []
    for i, item in enumerate(items):
        if isinstance(item, ReplySpec) or callable(item):
            script.append(item)
        else:
            script.append(reply_from_json(item, f"reply #{i + 1}"))
    return script
