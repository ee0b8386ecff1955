"""The LLM provider: one OpenAI-compatible endpoint through the official ``openai`` SDK.

Streaming with tool-call assembly and usage capture, our own retries (the SDK's are switched off so
the agent can show each retry and so nothing is retried once text has reached the user), errors
mapped to ``catbuddy.llm.errors``, and cancellation that closes the HTTP stream at once.

Three clocks bound a call: ``connect_timeout`` for the TCP/TLS connect, ``stream_idle_timeout`` for
the longest silence inside a stream (waiting for the first byte included), ``request_timeout`` for
the whole answer. Whatever an attempt ends in is classified in ``catbuddy.llm.faults``; nothing but
an ``LLMError`` ever leaves ``stream_chat`` or ``complete`` (cancellation aside).

``openai`` is imported on first use, so importing this module costs almost nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from catbuddy.llm.errors import (
    AuthenticationError,
    CallContext,
    EmptyResponse,
    missing_key_hint,
    retry_after_seconds,
)
from catbuddy.llm.faults import Fault, FaultKind, StallTimeout, classify, interrupted
from catbuddy.llm.outgoing import outgoing_messages, with_effort, without_rejected
from catbuddy.llm.protocol import Message, RetryCallback
from catbuddy.llm.reasoning_policy import ReasoningPolicy, policy_for
from catbuddy.llm.types import (
    Completed,
    LLMResponse,
    ProviderEvent,
    ReasoningChunk,
    StreamAssembler,
    StreamEvent,
    TextChunk,
    ToolCallProgress,
    choice_count,
    response_from_completion,
)
from catbuddy.messages import valid_json
from catbuddy.redact import redact_text

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from catbuddy.config import Settings

__all__ = [
    "Completed",
    "LLMResponse",
    "Provider",
    "ProviderEvent",
    "ReasoningChunk",
    "TextChunk",
    "ToolCallProgress",
]

OPENAI_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"  # local servers (Ollama, llama.cpp, vLLM) accept any key
BACKOFF_BASE = 1.0  # seconds before the first retry; doubles each time
BACKOFF_CAP = 30.0
BACKOFF_JITTER = 0.25  # ± this fraction, so many clients do not retry in step
RETRY_AFTER_CAP = 60.0  # a server asking for longer gets this, and we fail after max_retries anyway
CONNECT_RETRY_DELAY = 0.25  # refused / unknown host: one quick retry, so the error comes within seconds

log = logging.getLogger(__name__)


class Provider:
    """An OpenAI-compatible chat endpoint. Construct from ``Settings``; create one per event loop."""

    backoff_base: float = BACKOFF_BASE
    backoff_cap: float = BACKOFF_CAP
    retry_after_cap: float = RETRY_AFTER_CAP

    def __init__(
        self,
        settings: Settings,
        *,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        retry_after_cap: float | None = None,
    ) -> None:
        key = settings.api_key
        # With no key anywhere, a local server may still accept the placeholder; only its 401/403 (or
        # OpenAI itself, which always needs one) makes the missing key the error.
        self.key_missing = not key
        if not key:
            if not settings.base_url:
                raise AuthenticationError(
                    f"No API key configured: {OPENAI_BASE_URL} needs one, and neither `api_key` in "
                    f"config.toml nor {settings.api_key_env} is set.",
                    missing_key_hint(settings.api_key_env)
                    + " For a local server set `base_url` (e.g. OPENAI_BASE_URL=http://localhost:11434/v1).",
                )
            key = PLACEHOLDER_KEY
        self._api_key = key
        self.base_url = (settings.base_url or OPENAI_BASE_URL).rstrip("/")
        self.api_key_env = settings.api_key_env
        self.timeout = settings.request_timeout
        self.connect_timeout = min(settings.connect_timeout, settings.request_timeout)
        self.idle_timeout = min(settings.stream_idle_timeout, settings.request_timeout)
        self.max_retries = settings.max_retries
        self.settings = settings
        if backoff_base is not None:
            self.backoff_base = backoff_base
        if backoff_cap is not None:
            self.backoff_cap = backoff_cap
        if retry_after_cap is not None:
            self.retry_after_cap = retry_after_cap
        self._client: AsyncOpenAI | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"Provider(base_url={self.base_url!r})"

    @property
    def client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI, Timeout

            # httpx's read timeout is only a backstop: our own timers (idle and total) fire first.
            self._client = AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=Timeout(self.timeout, connect=self.connect_timeout),
                max_retries=0,  # ours, below: visible to the user, and never after output began
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def uses_openai(self) -> bool:
        return (urlparse(self.base_url).hostname or "").endswith("api.openai.com")

    def _limit(self, max_tokens: int | None) -> dict[str, Any]:
        if max_tokens is None:
            return {}
        # OpenAI's newer models refuse max_tokens; most compatible servers only know max_tokens.
        return {"max_completion_tokens" if self.uses_openai else "max_tokens": max_tokens}

    def _context(self, model: str, *, streaming: bool = True) -> CallContext:
        return CallContext(
            model,
            self.base_url,
            self.api_key_env,
            self._api_key,
            self.timeout,
            self.connect_timeout,
            self.idle_timeout if streaming else None,  # an unstreamed answer has only the total
            key_missing=self.key_missing,
        )

    # --- retries --------------------------------------------------------------------------------

    def retry_delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        asked = retry_after_seconds(exc) if exc is not None else None
        if asked is not None:
            return min(asked, self.retry_after_cap)
        delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
        return delay * random.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER)

    async def _before_retry(
        self, attempt: int, exc: BaseException, fault: Fault, on_retry: RetryCallback | None
    ) -> None:
        """Raise the fault's error if we may not retry; otherwise report and sleep. Both go to the log
        (the app's log file; a headless run's too), scrubbed of the key and URL passwords."""
        cap = self.max_retries if fault.retry_cap is None else min(fault.retry_cap, self.max_retries)
        if not fault.retryable or attempt > cap:
            self._log_failure(attempt, exc, fault)
            raise fault.error from exc
        if fault.kind is FaultKind.CONNECT:
            delay = min(CONNECT_RETRY_DELAY, self.retry_delay(attempt, exc))
        else:
            delay = self.retry_delay(attempt, exc)
        log.info(
            "%s",
            self._scrub(
                f"model call to {self.base_url} failed (attempt {attempt} of {cap + 1}): {fault.reason} "
                f"[{fault.kind.value}, {_error_class(exc)}]; retrying in {delay:.2f} s"
            ),
        )
        if on_retry is not None:
            result = on_retry(attempt, delay, fault.reason)
            if inspect.isawaitable(result):
                await result
        await asyncio.sleep(delay)

    def _log_failure(self, attempt: int, exc: BaseException, fault: Fault) -> None:
        error = fault.error
        # INFO, like the retries: the front end already shows the error; the log file keeps the record.
        log.info(
            "%s",
            self._scrub(
                f"model call to {self.base_url} failed after {attempt} attempt{'s' if attempt > 1 else ''} "
                f"[{fault.kind.value}, {_error_class(exc)}]: {type(error).__name__}: {error.message}"
            ),
        )

    def _scrub(self, text: str) -> str:
        return redact_text(text, (self._api_key,))

    def _deadline(self) -> float:
        return time.monotonic() + self.timeout

    async def _within(self, deadline: float, awaitable: Awaitable[Any]) -> Any:
        """Await ``awaitable`` before the call's total deadline (request_timeout)."""
        limit = asyncio.timeout(max(0.0, deadline - time.monotonic()))
        try:
            async with limit:
                return await awaitable
        except TimeoutError:
            if limit.expired():
                raise StallTimeout(self.timeout, idle=False) from None
            raise

    # --- calls ----------------------------------------------------------------------------------

    async def _post_chat(self, body: dict[str, Any], *, stream: bool) -> Any:
        """POST /chat/completions through the SDK's client (auth, timeouts, errors, SSE parsing).

        Not ``chat.completions.create``: that re-validates every message through the SDK's typed-dict
        transform, ~0.5 s per request at 1,000 messages, growing with the session. Our messages are
        already plain OpenAI JSON, built and persisted by us, so they are sent as they are."""
        from openai import AsyncStream, Timeout
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        options: Any = {"security": {"bearer_auth": True}}
        if stream:
            # httpx's read timeout bounds each socket read: no byte (a keep-alive comment counts)
            # for stream_idle_timeout ends the attempt, however long the whole stream runs.
            options["timeout"] = Timeout(self.timeout, connect=self.connect_timeout, read=self.idle_timeout)
            return await self.client.post(
                "/chat/completions",
                cast_to=ChatCompletion,
                body=body,
                options=options,
                stream=True,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )
        return await self.client.post("/chat/completions", cast_to=ChatCompletion, body=body, options=options)

    def policy(self, model: str, effort: str | None = None) -> ReasoningPolicy:
        """What this endpoint wants back for ``model`` (detected, then the model's config overrides)."""
        options = self.settings.options_for(model)
        return policy_for(
            self.base_url,
            model,
            send_reasoning=options.send_reasoning,
            effort=options.reasoning_effort if effort is None else effort,
            cache_breakpoints=options.cache_breakpoints,
        )

    async def stream_chat(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Message] | None = None,
        max_tokens: int | None = None,
        on_retry: RetryCallback | None = None,
        reasoning_effort: str | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """Yield ``TextChunk``/``ReasoningChunk``/``ToolCallProgress`` as the reply streams, then one
        ``Completed``.

        Raises only ``LLMError``s. One that ends the call after output was yielded is a
        ``StreamInterrupted`` whose ``partial_text`` is the text that arrived. Consume it inside
        ``contextlib.aclosing`` (or cancel the task): the HTTP stream is closed the moment the
        generator is closed or cancelled.
        """
        policy = self.policy(model, reasoning_effort)
        wire = outgoing_messages(messages, policy)
        kwargs: dict[str, Any] = {"model": model, "messages": wire, **self._limit(max_tokens)}
        if tools:
            kwargs["tools"] = list(tools)
        body = with_effort({**kwargs, "stream": True, "stream_options": {"include_usage": True}}, policy)
        ctx = self._context(model)
        attempt = 0
        cleaned = False
        dropped: set[str] = set()
        while True:
            attempt += 1
            assembler = StreamAssembler()
            yielded = False
            try:
                async for event in self._stream_attempt(body, assembler):
                    yielded = True
                    yield event
                response = assembler.response()
                _check_not_empty(response, ctx, events=assembler.chunks, choices=assembler.choices)
                yield Completed(response)
                return
            except UnicodeEncodeError as exc:
                if cleaned or yielded:
                    raise classify(exc, ctx).error from None
                # Text that is not valid UTF-8 slipped into the request: clean it once and resend.
                body, attempt, cleaned = valid_json(body), 0, True
            except Exception as exc:  # every fault, whatever raised it, becomes an LLMError
                fault = classify(exc, ctx)
                # The user has seen part of this reply: a retry would duplicate it. (A reply of only
                # reasoning is not cut off but complete and empty: its own error says so.)
                if yielded and fault.kind is not FaultKind.EMPTY:
                    cut = interrupted(fault, ctx, assembler.text)
                    self._log_failure(attempt, exc, Fault(fault.kind, False, fault.reason, cut))
                    raise cut from exc
                retry = without_rejected(body, exc, dropped)
                if retry is not None:
                    body, reason = retry
                    attempt -= 1  # not a retry of a fault: the same request without what it refused
                    await _report(on_retry, attempt + 1, 0.0, reason.format(model=model))
                    continue
                await self._before_retry(attempt, exc, fault, on_retry)

    async def _stream_attempt(
        self, body: dict[str, Any], assembler: StreamAssembler
    ) -> AsyncIterator[StreamEvent]:
        deadline = self._deadline()
        stream = None
        try:
            stream = await self._within(deadline, self._post_chat(body, stream=True))
            while True:
                try:
                    chunk = await self._within(deadline, stream.__anext__())
                except StopAsyncIteration:
                    for event in assembler.finish():
                        yield event
                    return
                for event in assembler.feed(chunk):
                    yield event
        finally:
            if stream is not None:
                await stream.close()

    async def complete(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        max_tokens: int | None = None,
        on_retry: RetryCallback | None = None,
        tools: Sequence[Message] | None = None,
        tool_choice: str | None = None,
    ) -> LLMResponse:
        """One non-streamed reply (compaction summaries; tools only to keep the chat's prefix). Raises only
        ``LLMError``s."""
        wire = outgoing_messages(messages, self.policy(model, ""))  # a summary needs no reasoning effort
        body: dict[str, Any] = {"model": model, "messages": wire, **self._limit(max_tokens)}
        if tools:
            body["tools"] = list(tools)
        if tool_choice:
            body["tool_choice"] = tool_choice
        ctx = self._context(model, streaming=False)
        attempt = 0
        cleaned = False
        dropped: set[str] = set()
        while True:
            attempt += 1
            try:
                completion = await self._within(self._deadline(), self._post_chat(body, stream=False))
                response = response_from_completion(completion)
                _check_not_empty(response, ctx, events=None, choices=choice_count(completion))
                return response
            except UnicodeEncodeError as exc:
                if cleaned:
                    raise classify(exc, ctx).error from None
                body, attempt, cleaned = valid_json(body), 0, True
            except Exception as exc:  # every fault, whatever raised it, becomes an LLMError
                retry = without_rejected(body, exc, dropped)
                if retry is not None:
                    body, reason = retry
                    attempt -= 1
                    await _report(on_retry, attempt + 1, 0.0, reason.format(model=model))
                    continue
                await self._before_retry(attempt, exc, classify(exc, ctx), on_retry)


async def _report(on_retry: RetryCallback | None, attempt: int, delay: float, reason: str) -> None:
    if on_retry is not None:
        result = on_retry(attempt, delay, reason)
        if inspect.isawaitable(result):
            await result


def _error_class(exc: BaseException) -> str:
    """The exception's class, and the deepest cause's when it differs (the SDK wraps httpx's)."""
    root, seen = exc, 0
    while seen < 16 and (root.__cause__ or root.__context__) is not None:
        root, seen = root.__cause__ or root.__context__, seen + 1  # type: ignore[assignment]
    name = type(exc).__name__
    return name if type(root) is type(exc) else f"{name} from {type(root).__name__}"


def _check_not_empty(response: LLMResponse, ctx: CallContext, *, events: int | None, choices: int) -> None:
    """An answer with nothing in it is an error the user sees, never an empty assistant message."""
    if not response.is_empty:
        return
    again = "Try again; if it keeps happening, check the model and the endpoint."
    if response.reasoning:
        budget = " and used its whole output budget" if response.finish_reason == "length" else ""
        raise EmptyResponse(
            f"`{ctx.model}` returned only reasoning{budget}: no answer and no tool call.",
            "Try again; if it keeps happening raise `max_output_tokens` for this model in config.toml, or "
            "lower its `reasoning_effort`.",
        )
    if events == 0:
        raise EmptyResponse(f"{ctx.base_url} sent an empty stream (no events) for `{ctx.model}`.", again)
    if choices == 0:
        raise EmptyResponse(f"{ctx.base_url} answered without any choices for `{ctx.model}`.", again)
    if response.finish_reason == "length":
        raise EmptyResponse(
            f"`{ctx.model}` used its whole output budget without writing any text (finish_reason length).",
            "Raise `max_output_tokens` for this model in config.toml, or try again.",
        )
    if response.finish_reason == "content_filter":
        raise EmptyResponse(
            f"The provider filtered `{ctx.model}`'s reply (finish_reason content_filter); nothing came back.",
            "Rephrase the request, or try again.",
        )
    raise EmptyResponse(f"`{ctx.model}` returned an empty reply (no text and no tool calls).", again)
