"""A scripted, OpenAI-compatible LLM server: for tests, and for trying catbuddy without an API key.

Run it by hand::

    python -m catbuddy.testing.scripted_llm examples/demo_script.json [--port 8765] [--strict]
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=anything CATBUDDY_MODEL=scripted catbuddy

or from Python::

    with ScriptedLLM([Reply.text("hi"), Reply.tool_call("read_file", {"path": "a.py"})]) as llm:
        settings = llm.settings()          # catbuddy Settings pointing at the server
        ...
        assert llm.requests[0]["messages"][-1]["content"] == "hello"

It serves ``POST /v1/chat/completions`` (streamed as SSE when ``stream`` is true, with a usage chunk
when ``stream_options.include_usage`` is true) and ``GET /v1/models``. Each chat request takes the
next reply of the script; when the script runs out it echoes the last user message, or (strict mode)
answers 400 ``script_exhausted`` so a test that makes an unexpected call fails loudly.

Script file format (JSON). Either a list of replies, or an object::

    {
      "replies": [ ...replies... ],
      "exhausted": "echo",            // or "error" (strict); --strict on the command line
      "context_window": 8192,         // optional: 400 context_length_exceeded above it
      "prompt_token_factor": 1.0,     // optional: report prompt_tokens × this (a "bigger" tokenizer)
      "api_key": "secret",            // optional: require Authorization: Bearer secret
      "models": ["scripted"]          // optional: other model names get 404 model_not_found
    }

A reply is a string (a text reply) or an object with these keys, all optional (but a reply needs
text, tool_calls or error)::

    {
      "text": "Streamed as several deltas",
      "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "call_1"}],
      "finish_reason": "stop",        // default: "tool_calls" when there are calls, else "stop"
      "chunk_size": 8,                // characters per text / argument delta
      "delay": 0.05,                  // seconds before each streamed chunk (unstreamed: the sum)
      "interleave_tool_calls": false, // mix fragments of parallel calls
      "disconnect_after": 3,          // drop the connection after this many chunks
      "error": {"status": 429, "message": "slow down", "type": "requests",
                "code": "rate_limit_exceeded", "param": null, "retry_after": 1}
    }

``arguments`` may be an object (sent as its JSON) or a raw string (sent as is, e.g. broken JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from catbuddy.testing import wire
from catbuddy.testing.script import (
    ErrorSpec,
    Reply,
    ReplySpec,
    ScriptError,
    ScriptItem,
    as_script,
    load_script,
)

DEFAULT_MODEL = "scripted"
DEFAULT_ENCODING = "o200k_base"
REDACTED = "<redacted>"
SHUTDOWN_POLL = 0.02  # serve_forever's poll interval: how long close() may wait for the loop to notice
_COUNTER_LOCK = threading.Lock()  # tiktoken takes ~1 s to load once; never load it twice at a time


@dataclass
class RecordedRequest:
    """One chat request as the server received it. ``request["messages"]`` reads the body."""

    index: int  # 1-based, in arrival order
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # names lower-cased; the authorization value is replaced by "<redacted>"
    prompt_tokens: int | None = None  # as the server counts (and reports) them
    outcome: str = "pending"  # streamed, completed, error <status>, context_length_exceeded, disconnected …
    reply_no: int | None = None  # which script reply answered it (1-based), None if none was used
    finished: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

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


class _Disconnected(Exception):
    """The client closed the connection while we were writing."""


def _counter(model: str) -> Any:
    from catbuddy.context.tokens import counter_for_model

    with _COUNTER_LOCK:
        return counter_for_model(model, DEFAULT_ENCODING)


class ScriptedLLM:
    """The server. ``start()``/``close()`` or use it as a context manager; thread-safe throughout."""

    def __init__(
        self,
        script: Sequence[ScriptItem | Mapping[str, Any] | str] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        strict: bool = False,
        context_window: int | None = None,
        count_max_tokens: bool = False,
        prompt_token_factor: float = 1.0,
        api_key: str | None = None,
        models: Sequence[str] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self._script: list[ScriptItem] = as_script(script)
        self.host = host
        self.port = port
        self.strict = strict
        self.context_window = context_window
        self.count_max_tokens = count_max_tokens  # also count max_tokens against the window
        self.prompt_token_factor = prompt_token_factor
        self.api_key = api_key
        self.models = list(models) if models else None
        self._log = log
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._replies_used = 0
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle -----------------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        if self._server is not None:
            return self
        handler = type("Handler", (_Handler,), {"llm": self})
        self._server = ThreadingHTTPServer((self.host, self.port), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(SHUTDOWN_POLL,), name="scripted-llm", daemon=True
        )
        self._thread.start()
        # Load the tokenizer in the background so start() stays fast; the first request waits for it.
        threading.Thread(target=_counter, args=(DEFAULT_MODEL,), daemon=True).start()
        return self

    def close(self) -> None:
        self._stopping.set()  # slow streams stop sleeping and end
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def settings(self, **overrides: Any) -> Any:
        """catbuddy ``Settings`` pointing at this server (model "scripted", fast retries off)."""
        from catbuddy.config import Settings

        values: dict[str, Any] = {
            "model": DEFAULT_MODEL,
            "base_url": self.base_url,
            "api_key": self.api_key or "test-key",
            "max_retries": 0,
        }
        values.update(overrides)
        return Settings(**values)

    # --- the script -----------------------------------------------------------------------------

    def push(self, *replies: ScriptItem | Mapping[str, Any] | str) -> None:
        """Append replies to the script (they are used after the ones already queued)."""
        items = as_script(replies)
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat request received so far (a snapshot, oldest first)."""
        with self._lock:
            return list(self._requests)

    @property
    def over_budget(self) -> list[RecordedRequest]:
        """Requests refused because their prompt did not fit ``context_window``."""
        return [r for r in self.requests if r.outcome == "context_length_exceeded"]

    def _record(self, path: str, body: dict[str, Any], headers: Mapping[str, str]) -> RecordedRequest:
        shown = {k.lower(): (REDACTED if k.lower() == "authorization" else v) for k, v in headers.items()}
        with self._lock:
            record = RecordedRequest(len(self._requests) + 1, path, body, shown)
            self._requests.append(record)
        return record

    def _next_reply(self, body: dict[str, Any], record: RecordedRequest) -> ReplySpec:
        with self._lock:
            item = self._script.pop(0) if self._script else None
            if item is not None:
                self._replies_used += 1
                record.reply_no = self._replies_used
        if item is None:
            if self.strict:
                used = self._replies_used
                message = (
                    f"scripted LLM: the script is exhausted ({used} replies used); request #{record.index}"
                )
                return Reply.error(400, message, code="script_exhausted")
            return Reply.echo(body)
        if isinstance(item, ReplySpec):
            return item
        try:
            result = item(body)
        except Exception as exc:  # a broken responder must fail the test, not hang it
            return Reply.error(400, f"scripted LLM: responder raised {exc!r}", code="responder_failed")
        return as_script([result])[0] if not isinstance(result, ReplySpec) else result

    # --- accounting -----------------------------------------------------------------------------

    def count_prompt(self, body: Mapping[str, Any]) -> int:
        counter = _counter(str(body.get("model") or DEFAULT_MODEL))
        counted = counter.count_request(body.get("messages") or [], body.get("tools"))
        return math.ceil(counted * self.prompt_token_factor)

    def count_completion(self, reply: ReplySpec, model: str) -> int:
        counter = _counter(model)
        total = counter.count_text(reply.text)
        for call in reply.tool_calls:
            total += counter.count_text(call.name) + counter.count_text(call.arguments_json)
        return total

    def _over_window(self, body: Mapping[str, Any], prompt_tokens: int) -> ErrorSpec | None:
        if self.context_window is None:
            return None
        needed = prompt_tokens
        if self.count_max_tokens:
            needed += int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
        if needed <= self.context_window:
            return None
        message = (
            f"This model's maximum context length is {self.context_window} tokens. However, your messages "
            f"resulted in {needed} tokens. Please reduce the length of the messages."
        )
        return ErrorSpec(400, "invalid_request_error", "context_length_exceeded", message, "messages")

    def _auth_error(self, headers: Mapping[str, str]) -> ErrorSpec | None:
        if self.api_key is None:
            return None
        given = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        if given == f"Bearer {self.api_key}":
            return None
        # Echoes the key it got, as some proxies do, so tests prove catbuddy never shows a key.
        shown = given.removeprefix("Bearer ") or "(none)"
        return ErrorSpec(
            401, "invalid_request_error", "invalid_api_key", f"Incorrect API key provided: {shown}."
        )

    def emit(self, line: str) -> None:
        if self._log is not None:
            self._log(line)


class _Handler(BaseHTTPRequestHandler):
    llm: ScriptedLLM
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
        problem = self.llm._auth_error(dict(self.headers.items()))
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
        if self.path.rstrip("/") != "/v1/chat/completions":
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
        record = self.llm._record(self.path, body, dict(self.headers.items()))
        try:
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
        problem = llm._auth_error(dict(self.headers.items()))
        model = str(body.get("model") or DEFAULT_MODEL)
        if problem is None and llm.models is not None and model not in llm.models:
            problem = ErrorSpec(
                404, message=f"The model `{model}` does not exist or you do not have access to it."
            )
        if problem is not None:
            self._refuse(record, problem)
            return
        record.prompt_tokens = llm.count_prompt(body)
        too_long = llm._over_window(body, record.prompt_tokens)
        if too_long is not None:  # refused before generation: no script reply is used
            self._refuse(record, too_long, "context_length_exceeded")
            return
        reply = llm._next_reply(body, record)
        if reply.error is not None:
            self._refuse(record, reply.error)
            return
        usage = wire.usage_dict(record.prompt_tokens, llm.count_completion(reply, model))
        ctx = wire.StreamContext(
            f"chatcmpl-scripted-{record.index}", model, int(time.time()), f"call_{record.index}"
        )
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = wire.stream_chunks(reply, ctx, include_usage=include_usage, usage=usage)
        if body.get("stream"):
            self._stream(reply, chunks, record)
            return
        # A slow reply is slow unstreamed too: it takes as long as its stream would have.
        if reply.delay and self.llm._stopping.wait(reply.delay * (len(chunks) + 1)):
            record.outcome = "server closed"
            self._abort()
            return
        record.outcome = "completed"
        self._send_json(200, wire.completion(reply, ctx, usage=usage))

    def _stream(self, reply: ReplySpec, chunks: list[dict[str, Any]], record: RecordedRequest) -> None:
        record.outcome = "streaming"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        for number, event in enumerate(events):
            if reply.disconnect_after is not None and number >= reply.disconnect_after:
                record.outcome = "dropped by script"
                self._abort()
                return
            if reply.delay and self.llm._stopping.wait(reply.delay):
                record.outcome = "server closed"
                self._abort()
                return
            if number == len(events) - 1:
                record.outcome = "streamed"
            self._write_chunk(event.encode("utf-8"))
        self._write_chunk(b"")  # the terminating zero-length chunk

    # --- low level ------------------------------------------------------------------------------

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
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


# --- command line --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m catbuddy.testing.scripted_llm",
        description="Serve a scripted OpenAI-compatible LLM so catbuddy can run without an API key.",
    )
    parser.add_argument("script", type=Path, help="a JSON script file (format: see this module's docstring)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--strict", action="store_true", help="answer an error once the script runs out")
    parser.add_argument("--quiet", action="store_true", help="do not print a line per request")
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except ScriptError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    options = script.options
    strict = args.strict or options.get("exhausted") == "error"
    llm = ScriptedLLM(
        script.replies,
        host=args.host,
        port=args.port,
        strict=strict,
        context_window=options.get("context_window"),
        prompt_token_factor=float(options.get("prompt_token_factor", 1.0)),
        api_key=options.get("api_key"),
        models=options.get("models"),
        log=None if args.quiet else lambda line: print(line, flush=True),
    )
    try:
        llm.start()
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    key = options.get("api_key") or "anything"
    model = (options.get("models") or [DEFAULT_MODEL])[0]
    after = "an error" if strict else "echo replies"
    print(f"Scripted LLM serving {len(script.replies)} replies (then {after}) at {llm.base_url}", flush=True)
    print("Point catbuddy at it:", flush=True)
    print(
        f"  OPENAI_BASE_URL={llm.base_url} OPENAI_API_KEY={key} CATBUDDY_MODEL={model} catbuddy", flush=True
    )
    print("Press Ctrl+C to stop.", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        llm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
