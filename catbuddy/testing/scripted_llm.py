"""A scripted, OpenAI-compatible LLM server: for tests, and for trying catbuddy without an API key.

Run it by hand::

    python -m catbuddy.testing.scripted_llm SCRIPT.json [--port 8765] [--strict]
    OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=anything CATBUDDY_MODEL=scripted catbuddy

(``catbuddy demo`` does both with the shipped ``catbuddy/testing/demo_script.json``.)

or from Python::

    with ScriptedLLM([Reply.text("hi"), Reply.tool_call("read_file", {"path": "a.py"})]) as llm:
        settings = llm.settings()          # catbuddy Settings pointing at the server
        ...
        assert llm.requests[0]["messages"][-1]["content"] == "hello"

It serves ``POST /v1/messages`` too: Anthropic's Messages API for the same script (SSE ``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``; a reply's ``reasoning`` is a signed thinking block;
usage with the simulated breakpoint cache's reads and writes; see ``messages_wire.py``), so the native
Anthropic provider is tested with the real SDK (``settings(provider="anthropic")`` points it here).

It serves ``POST /v1/chat/completions`` (streamed as SSE when ``stream`` is true, with a usage chunk
when ``stream_options.include_usage`` is true) and ``GET /v1/models``. Each chat request takes the
next reply of the script; when the script runs out it echoes the last user message, or (strict mode)
answers 400 ``script_exhausted`` so a test that makes an unexpected call fails loudly.

Script file format (JSON). Either a list of replies, or an object::

    {
      "replies": [ ...replies... ],
      "exhausted": "echo",            // or "error" (strict); --strict on the command line
      "summaries": "script",          // or "short": a compaction's summary request (catbuddy's
                                      // compaction prompt) gets a short scripted summary and
                                      // uses no reply of the script
      "context_window": 8192,         // optional: 400 context_length_exceeded above it
      "prompt_token_factor": 1.0,     // optional: report prompt_tokens × this (a "bigger" tokenizer)
      "api_key": "secret",            // optional: require Authorization: Bearer secret
      "models": ["scripted"],         // optional: other model names get 404 model_not_found
      "prefix_cache": true,           // optional: simulate a provider prompt cache (default on)
      "cache_report": "openai"        // or "deepseek" (prompt_cache_hit_tokens) or "none", or
                                      // "anthropic": Claude's cache behind an OpenAI-compatible gateway —
                                      // only cache_control breakpoints cache (breakpoint_cache.py), reads
                                      // and writes reported as OpenRouter does (cached_tokens,
                                      // cache_write_tokens)
    }

Usage carries the prompt tokens the simulated cache served (see ``prefix_cache.py``): OpenAI's
``prompt_tokens_details.cached_tokens`` by default, as a provider does, from 1,024 prompt tokens up.

A reply is a string (a text reply) or an object with these keys, all optional (but a reply needs
text, tool_calls or error)::

    {
      "text": "Streamed as several deltas",
      "reasoning": "Thinking first…",  // streamed before the text as delta.reasoning_content,
      "reasoning_field": "reasoning", // or delta.reasoning, or "think": <think>…</think> in content
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

Faults, for testing how a client copes with a misbehaving server or proxy (a reply that is only a
fault needs no text)::

    {"text": "abc", "malformed_after": 2}   // after 2 good chunks, one `data:` line that is not JSON
                                            // (0: the very first event); unstreamed: the whole body
    {"malformed_after": 0, "malformed_data": "{\"choices\": \"oops\"}"}  // any raw data line instead
    {"stall_after": 0}                      // accept the request and never answer (no status line)
    {"text": "abc", "stall_after": 3}       // headers and 3 chunks, then silence; either way the
                                            // connection is held until the client gives up
    {"stall_after": 1, "stall_keepalive": 0.5}  // …but an SSE comment every 0.5 s while stalled:
                                            // bytes keep flowing, no event ever comes
    {"no_choices": true}                    // a 200 with no choices (streamed: only the usage chunk)
    {"empty": true}                         // a completion with no text and no tool calls
    {"no_events": true}                     // a 200 stream with no event and no [DONE] (unstreamed:
                                            // an empty body)
    {"tool_calls": [...], "tool_call_ids": "duplicate"}   // or "missing" (no id) or "empty" ("")

In Python: ``Reply.malformed(after, data, text=...)``, ``Reply.stall(after, text=...)``,
``Reply.no_choices()``, ``Reply.empty()``, ``Reply.no_events()``, and ``tool_call_ids=`` on any reply.
Connection refused and an unknown host need no server: point the client at a closed port, or at a
host under ``.invalid`` (RFC 6761: it never resolves).
"""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from catbuddy.redact import REDACTED
from catbuddy.testing.breakpoint_cache import BreakpointCache
from catbuddy.testing.http_handler import ChatHandler, RecordedRequest
from catbuddy.testing.prefix_cache import PrefixCache
from catbuddy.testing.script import (
    DEFAULT_MODEL,
    ErrorSpec,
    Reply,
    ReplySpec,
    ScriptError,
    ScriptItem,
    ToolCallSpec,
    as_script,
    is_summary_request,
    load_script,
    short_summary,
)

__all__ = [
    "ErrorSpec",
    "RecordedRequest",
    "Reply",
    "ReplySpec",
    "ScriptError",
    "ScriptedLLM",
    "ToolCallSpec",
    "main",
]

DEFAULT_ENCODING = "o200k_base"
CACHE_REPORTS = ("openai", "deepseek", "anthropic", "none")  # how usage reports cached prompt tokens

SHUTDOWN_POLL = 0.02  # serve_forever's poll interval: how long close() may wait for the loop to notice
_COUNTER_LOCK = threading.Lock()  # tiktoken takes ~1 s to load once; never load it twice at a time


def _counter(model: str) -> Any:
    from catbuddy.context.counting.tokens import counter_for_model

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
        short_summaries: bool = False,
        prefix_cache: PrefixCache | None | bool = True,
        cache_report: str = "openai",
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
        self.short_summaries = short_summaries  # answer summary requests with short_summary()
        # A provider-like prompt cache is on by default; False turns it off (cached tokens always 0).
        self.prefix_cache = PrefixCache() if prefix_cache is True else prefix_cache or None
        self.breakpoint_cache = BreakpointCache() if cache_report == "anthropic" else None
        if cache_report not in CACHE_REPORTS:
            raise ValueError(f"cache_report must be one of {', '.join(CACHE_REPORTS)}, got {cache_report!r}")
        self._cache_report = cache_report
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._replies_used = 0
        self.stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life cycle -----------------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        if self._server is not None:
            return self
        handler = type("Handler", (ChatHandler,), {"llm": self})
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
        self.stopping.set()  # slow streams stop sleeping and end
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

        anthropic = overrides.get("provider") == "anthropic"
        values: dict[str, Any] = {
            "model": DEFAULT_MODEL,
            # The anthropic SDK adds /v1/messages itself; OpenAI-compatible clients want the /v1.
            "base_url": self.base_url.removesuffix("/v1") if anthropic else self.base_url,
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

    def clear_script(self) -> int:
        """Drop the replies still queued (a bench re-scripts the server between runs); how many there were."""
        with self._lock:
            dropped = len(self._script)
            self._script.clear()
        return dropped

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat request received so far (a snapshot, oldest first)."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the recorded requests (long runs: each record holds the whole history it was sent)."""
        with self._lock:
            self._requests.clear()

    @property
    def over_budget(self) -> list[RecordedRequest]:
        """Requests refused because their prompt did not fit ``context_window``."""
        return [r for r in self.requests if r.outcome == "context_length_exceeded"]

    def record(self, path: str, body: dict[str, Any], headers: Mapping[str, str]) -> RecordedRequest:
        shown = {k.lower(): (REDACTED if k.lower() == "authorization" else v) for k, v in headers.items()}
        with self._lock:
            record = RecordedRequest(len(self._requests) + 1, path, body, shown)
            self._requests.append(record)
        return record

    def next_reply(self, body: dict[str, Any], record: RecordedRequest) -> ReplySpec:
        if self.short_summaries and is_summary_request(body):
            return short_summary(body)
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

    def cached_prompt(self, body: Mapping[str, Any], prompt_tokens: int) -> int:
        """Prompt tokens the simulated prefix cache serves for this request (and remember its prefix)."""
        return self.cache_usage(body, prompt_tokens)[0]

    def breakpoint_usage(self, body: Mapping[str, Any], prompt_tokens: int) -> tuple[int, int]:
        """(read, written) of the Anthropic-style cache, whatever ``cache_report`` says (the Messages mode)."""
        if self.breakpoint_cache is None:
            self.breakpoint_cache = BreakpointCache()
        counter = _counter(str(body.get("model") or DEFAULT_MODEL))
        return self.breakpoint_cache.served(body, prompt_tokens, counter.count_text)

    def cache_usage(self, body: Mapping[str, Any], prompt_tokens: int) -> tuple[int, int]:
        """(read, written) prompt tokens of the simulated cache for this request: the prefix cache
        reads only; the Anthropic-style cache reads and writes at breakpoints."""
        counter = _counter(str(body.get("model") or DEFAULT_MODEL))
        if self.breakpoint_cache is not None:
            return self.breakpoint_cache.served(body, prompt_tokens, counter.count_text)
        if self.prefix_cache is None:
            return 0, 0
        return self.prefix_cache.served(body, prompt_tokens, counter.count_text), 0

    @property
    def cache_report(self) -> str:
        return self._cache_report

    def count_completion(self, reply: ReplySpec, model: str) -> int:
        counter = _counter(model)
        total = counter.count_text(reply.text)
        for call in reply.tool_calls:
            total += counter.count_text(call.name) + counter.count_text(call.arguments_json)
        return total

    def over_window(self, body: Mapping[str, Any], prompt_tokens: int) -> ErrorSpec | None:
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

    def auth_error(self, headers: Mapping[str, str]) -> ErrorSpec | None:
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
        prefix_cache=bool(options.get("prefix_cache", True)),
        cache_report=str(options.get("cache_report", "openai")),
        log=None if args.quiet else lambda line: print(line, flush=True),
        short_summaries=options.get("summaries") == "short",
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
