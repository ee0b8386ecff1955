"""The HTTP side of the scripted LLM server: one handler per request, and the request records.

``ScriptedLLM`` (in ``scripted_llm``) owns the script and the accounting; this module turns its
decisions into HTTP: JSON answers, SSE streams with chunked transfer encoding (so a dropped
connection is visible to the client as a broken stream), and OpenAI error bodies.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from catbuddy.errors import CatbuddyError
from catbuddy.testing import messages_wire, wire
from catbuddy.testing.script import DEFAULT_MODEL, ErrorSpec, ReplySpec

HOLD_POLL = 0.05  # seconds between checks, while stalling, of whether the client is still there


@dataclass
class RecordedRequest:
    """One chat request as the server received it. ``request["messages"]`` reads the body."""

    index: int  # 1-based, in arrival order
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # names lower-cased; the authorization value is replaced by "<redacted>"
    prompt_tokens: int | None = None  # as the server counts (and reports) them
    cached_tokens: int = 0  # of those, served from the simulated prefix cache
    cache_write_tokens: int = 0  # of those, written to the simulated Anthropic-style cache
    outcome: str = "pending"  # streamed, completed, error <status>, context_length_exceeded, disconnected …
    reply_no: int | None = None  # which script reply answered it (1-based), None if none was used
    finished: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)
    # time.perf_counter() when the server had read the request: benches time a client's first request
    received: float = field(default_factory=time.perf_counter, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.body.get(key, default)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    def wait(self, timeout: float = 5.0) -> bool:
        """Wait until the server is done with this request (the reply sent, or the client gone)."""
        return self.finished.wait(timeout)


class ChatBackend(Protocol):
    """What the handler needs from the server that owns the script (``ScriptedLLM`` implements it)."""

    models: list[str] | None
    stopping: threading.Event

    def auth_error(self, headers: Mapping[str, str]) -> ErrorSpec | None: ...

    def record(self, path: str, body: dict[str, Any], headers: Mapping[str, str]) -> RecordedRequest: ...

    def next_reply(self, body: dict[str, Any], record: RecordedRequest) -> ReplySpec: ...

    def count_prompt(self, body: Mapping[str, Any]) -> int: ...

    def count_completion(self, reply: ReplySpec, model: str) -> int: ...

    def cached_prompt(self, body: Mapping[str, Any], prompt_tokens: int) -> int: ...

    def cache_usage(self, body: Mapping[str, Any], prompt_tokens: int) -> tuple[int, int]: ...

    def breakpoint_usage(self, body: Mapping[str, Any], prompt_tokens: int) -> tuple[int, int]: ...

    @property
    def cache_report(self) -> str: ...

    def over_window(self, body: Mapping[str, Any], prompt_tokens: int) -> ErrorSpec | None: ...

    def emit(self, line: str) -> None: ...


class _Disconnected(CatbuddyError):
    """The client closed the connection while we were writing."""


class ChatHandler(BaseHTTPRequestHandler):
    """Serves /v1/chat/completions and /v1/models for the ``llm`` class attribute."""

    llm: ChatBackend
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # http.server prints every request
        return

    # --- routes ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        with contextlib.suppress(_Disconnected):  # the client left; nothing to answer
            self._get()

    def do_POST(self) -> None:
        with contextlib.suppress(_Disconnected):
            self._post()

    def _get(self) -> None:
        problem = self.llm.auth_error(dict(self.headers.items()))
        if problem is not None:
            self._send_error(problem)
        elif self.path.rstrip("/") == "/v1/models":
            names = self.llm.models or [DEFAULT_MODEL]
            data = [
                {"id": n, "object": "model", "created": 0, "owned_by": "catbuddy-scripted"} for n in names
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error(
                ErrorSpec(404, code="unknown_url", message=f"Unknown request URL: GET {self.path}.")
            )

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        route = self.path.split("?")[0].rstrip("/")
        if route not in ("/v1/chat/completions", "/v1/messages"):
            self._send_error(
                ErrorSpec(404, code="unknown_url", message=f"Unknown request URL: POST {self.path}.")
            )
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._send_error(
                ErrorSpec(400, message=f"We could not parse the JSON body of your request: {exc}")
            )
            return
        record = self.llm.record(self.path, body, dict(self.headers.items()))
        try:
            if route == "/v1/messages":
                self._messages(body, record)
            else:
                self._chat(body, record)
        except _Disconnected:
            record.outcome = "disconnected"
        finally:
            self.llm.emit(f"#{record.index} {record.model or '?'}: {record.outcome}")
            record.finished.set()

    # --- chat -----------------------------------------------------------------------------------

    def _refuse(self, record: RecordedRequest, spec: ErrorSpec, outcome: str = "") -> None:
        # The outcome is set before the answer leaves, so a client that got it can already read it.
        code = wire.error_body(spec)["error"]["code"]
        record.outcome = outcome or f"error {spec.status}" + (f" {code}" if code else "")
        self._send_error(spec)

    def _chat(self, body: dict[str, Any], record: RecordedRequest) -> None:
        llm = self.llm
        problem = llm.auth_error(dict(self.headers.items()))
        model = str(body.get("model") or DEFAULT_MODEL)
        if problem is None and llm.models is not None and model not in llm.models:
            problem = ErrorSpec(
                404, message=f"The model `{model}` does not exist or you do not have access to it."
            )
        if problem is not None:
            self._refuse(record, problem)
            return
        record.prompt_tokens = llm.count_prompt(body)
        too_long = llm.over_window(body, record.prompt_tokens)
        if too_long is not None:  # refused before generation: no script reply is used
            self._refuse(record, too_long, "context_length_exceeded")
            return
        reply = llm.next_reply(body, record)
        if reply.error is not None:
            self._refuse(record, reply.error)
            return
        record.cached_tokens, record.cache_write_tokens = llm.cache_usage(body, record.prompt_tokens)
        usage = wire.usage_dict(
            record.prompt_tokens,
            llm.count_completion(reply, model),
            record.cached_tokens,
            llm.cache_report,
            record.cache_write_tokens,
        )
        ctx = wire.StreamContext(
            f"chatcmpl-scripted-{record.index}", model, int(time.time()), f"call_{record.index}"
        )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = wire.stream_chunks(reply, ctx, include_usage=include_usage, usage=usage)
        if body.get("stream"):
            self._stream(reply, chunks, record)
            return
        if reply.stall_after is not None:  # unstreamed there is nothing to send before the silence
            self._hold(record)
            return
        # A slow reply is slow unstreamed too: it takes as long as its stream would have.
        if reply.delay and self.llm.stopping.wait(reply.delay * (len(chunks) + 1)):
            record.outcome = "server closed"
            self._abort()
            return
        if reply.no_events or reply.malformed_after is not None:
            record.outcome = "empty body" if reply.no_events else "malformed body"
            self._send_raw(200, b"" if reply.no_events else reply.malformed_data.encode("utf-8"))
            return
        record.outcome = "completed"
        self._send_json(200, wire.completion(reply, ctx, usage=usage))

    # --- Anthropic Messages (messages_wire) --------------------------------------------------------

    def _messages(self, body: dict[str, Any], record: RecordedRequest) -> None:
        llm = self.llm
        headers = dict(self.headers.items())
        key = next((v for k, v in headers.items() if k.lower() == "x-api-key"), None)
        if key is not None:  # Anthropic's SDK sends the key as x-api-key
            headers["Authorization"] = f"Bearer {key}"
        problem = llm.auth_error(headers)
        model = str(body.get("model") or DEFAULT_MODEL)
        if problem is None and llm.models is not None and model not in llm.models:
            problem = ErrorSpec(404, message=f"model: {model}")
        if problem is not None:
            self._refuse_messages(record, problem)
            return
        view = messages_wire.counting_view(body)
        record.prompt_tokens = llm.count_prompt(view)
        if llm.over_window(view, record.prompt_tokens) is not None:
            window = getattr(llm, "context_window", 0) or 0
            self._refuse_messages(
                record, messages_wire.too_long(record.prompt_tokens, window), "context_length_exceeded"
            )
            return
        reply = llm.next_reply(view, record)
        if reply.error is not None:
            self._refuse_messages(record, reply.error)
            return
        record.cached_tokens, record.cache_write_tokens = llm.breakpoint_usage(view, record.prompt_tokens)
        tokens = messages_wire.usage(
            record.prompt_tokens,
            record.cached_tokens,
            record.cache_write_tokens,
            llm.count_completion(reply, model),
        )
        message_id = f"msg_scripted_{record.index}"
        if body.get("stream"):
            events = messages_wire.stream_events(reply, model, message_id, tokens)
            self._stream(reply, [], record, events=events)
            return
        record.outcome = "completed"
        self._send_json(200, messages_wire.message(reply, model, message_id, tokens))

    def _refuse_messages(self, record: RecordedRequest, spec: ErrorSpec, outcome: str = "") -> None:
        record.outcome = outcome or f"error {spec.status}"
        self._send_json(spec.status, messages_wire.error_body(spec), wire.error_headers(spec))

    def _stream(
        self,
        reply: ReplySpec,
        chunks: list[dict[str, Any]],
        record: RecordedRequest,
        *,
        events: list[str] | None = None,
    ) -> None:
        if reply.stall_after == 0 and reply.stall_keepalive is None:
            self._hold(record)  # accept the request and never answer, not even a status line
            return
        record.outcome = "streaming"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if events is None:
            events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        if reply.no_events:
            events = []
        if reply.malformed_after is not None:
            events.insert(min(reply.malformed_after, len(events)), f"data: {reply.malformed_data}\n\n")
        for number, event in enumerate(events):
            if reply.disconnect_after is not None and number >= reply.disconnect_after:
                record.outcome = "dropped by script"
                self._abort()
                return
            if reply.stall_after is not None and number >= reply.stall_after:
                self._hold(record, reply.stall_keepalive)
                return
            if reply.delay and self.llm.stopping.wait(reply.delay):
                record.outcome = "server closed"
                self._abort()
                return
            if number == len(events) - 1:
                record.outcome = "streamed"
            self._write_chunk(event.encode("utf-8"))
        if not events:
            record.outcome = "streamed (no events)"
        self._write_chunk(b"")  # the terminating zero-length chunk

    # --- low level ------------------------------------------------------------------------------

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as exc:
            raise _Disconnected from exc

    def _hold(self, record: RecordedRequest, keepalive: float | None = None) -> None:
        """Stall: send nothing more (or only SSE comments every ``keepalive`` seconds), until the
        client gives up (closes) or the server is closed."""
        record.outcome = "stalled"
        try:
            self.wfile.flush()
        except OSError:
            pass
        next_ping = time.monotonic() + (keepalive or 0)
        while not self.llm.stopping.wait(min(HOLD_POLL, keepalive or HOLD_POLL)):
            if keepalive is not None and time.monotonic() >= next_ping:
                try:
                    self._write_chunk(b": keep-alive\n\n")
                except _Disconnected:
                    record.outcome = "stalled (client gave up)"
                    return
                next_ping = time.monotonic() + keepalive
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    record.outcome = "stalled (client gave up)"
                    return
            except OSError:
                record.outcome = "stalled (client gave up)"
                return
        record.outcome = "stalled (server closed)"
        self._abort()

    def _send_raw(self, status: int, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as exc:
            raise _Disconnected from exc

    def _abort(self) -> None:
        """Close the socket without ending the chunked body: the client sees a broken stream."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError) as exc:
            raise _Disconnected from exc

    def _send_error(self, spec: ErrorSpec) -> None:
        self._send_json(spec.status, wire.error_body(spec), wire.error_headers(spec))
