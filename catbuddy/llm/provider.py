"""The LLM provider: one OpenAI-compatible endpoint through the official ``openai`` SDK.

Streaming with tool-call assembly and usage capture, our own retries (the SDK's are switched off so
the agent can show each retry and so nothing is retried once text has reached the user), errors
mapped to ``catbuddy.llm.errors``, and cancellation that closes the HTTP stream at once.

``openai`` is imported on first use, so importing this module costs almost nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from catbuddy.llm.errors import (
    AuthenticationError,
    CallContext,
    from_openai,
    is_retryable,
    retry_after_seconds,
    retry_reason,
)
from catbuddy.llm.protocol import Message, RetryCallback
from catbuddy.llm.types import (
    Completed,
    LLMResponse,
    ProviderEvent,
    StreamAssembler,
    TextChunk,
    ToolCallProgress,
    response_from_completion,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from catbuddy.config import Settings

__all__ = ["Completed", "LLMResponse", "Provider", "ProviderEvent", "TextChunk", "ToolCallProgress"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "not-needed"  # local servers (Ollama, llama.cpp, vLLM) accept any key
BACKOFF_BASE = 1.0  # seconds before the first retry; doubles each time
BACKOFF_CAP = 30.0
BACKOFF_JITTER = 0.25  # ± this fraction, so many clients do not retry in step
RETRY_AFTER_CAP = 60.0  # a server asking for longer gets this, and we fail after max_retries anyway
CONNECT_TIMEOUT = 10.0  # the configured request_timeout is for the (slow) answer, not the connect

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
        if not key:
            if not settings.base_url:
                raise AuthenticationError(
                    f"No API key: {settings.api_key_env} is not set.",
                    f"Export {settings.api_key_env}=sk-..., or set `base_url` to a local server "
                    "(e.g. OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama).",
                )
            key = PLACEHOLDER_KEY
        self._api_key = key
        self.base_url = (settings.base_url or OPENAI_BASE_URL).rstrip("/")
        self.api_key_env = settings.api_key_env
        self.timeout = settings.request_timeout
        self.max_retries = settings.max_retries
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

            self._client = AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=Timeout(self.timeout, connect=min(CONNECT_TIMEOUT, self.timeout)),
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

    def _context(self, model: str) -> CallContext:
        return CallContext(model, self.base_url, self.api_key_env, self._api_key, self.timeout)

    # --- retries --------------------------------------------------------------------------------

    def retry_delay(self, attempt: int, exc: BaseException | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        asked = retry_after_seconds(exc) if exc is not None else None
        if asked is not None:
            return min(asked, self.retry_after_cap)
        delay = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
        return delay * random.uniform(1 - BACKOFF_JITTER, 1 + BACKOFF_JITTER)

    async def _before_retry(
        self, attempt: int, exc: BaseException, model: str, on_retry: RetryCallback | None
    ) -> None:
        """Raise the mapped error if we may not retry; otherwise report and sleep."""
        if not is_retryable(exc) or attempt > self.max_retries:
            raise from_openai(exc, self._context(model)) from exc
        delay = self.retry_delay(attempt, exc)
        if on_retry is not None:
            result = on_retry(attempt, delay, retry_reason(exc))
            if inspect.isawaitable(result):
                await result
        await asyncio.sleep(delay)

    # --- calls ----------------------------------------------------------------------------------

    async def _post_chat(self, body: dict[str, Any], *, stream: bool) -> Any:
        """POST /chat/completions through the SDK's client (auth, timeouts, errors, SSE parsing).

        Not ``chat.completions.create``: that re-validates every message through the SDK's typed-dict
        transform, ~0.5 s per request at 1,000 messages, growing with the session. Our messages are
        already plain OpenAI JSON, built and persisted by us, so they are sent as they are."""
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        options: Any = {"security": {"bearer_auth": True}}
        if stream:
            return await self.client.post(
                "/chat/completions",
                cast_to=ChatCompletion,
                body=body,
                options=options,
                stream=True,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )
        return await self.client.post("/chat/completions", cast_to=ChatCompletion, body=body, options=options)

    async def stream_chat(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Message] | None = None,
        max_tokens: int | None = None,
        on_retry: RetryCallback | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """Yield ``TextChunk``/``ToolCallProgress`` as the reply streams, then one ``Completed``.

        Consume it inside ``contextlib.aclosing`` (or cancel the task): the HTTP stream is closed the
        moment the generator is closed or cancelled.
        """
        import openai

        kwargs: dict[str, Any] = {"model": model, "messages": list(messages), **self._limit(max_tokens)}
        if tools:
            kwargs["tools"] = list(tools)
        attempt = 0
        while True:
            attempt += 1
            yielded = False
            stream = None
            try:
                stream = await self._post_chat(
                    {**kwargs, "stream": True, "stream_options": {"include_usage": True}}, stream=True
                )
                assembler = StreamAssembler()
                async for chunk in stream:
                    for event in assembler.feed(chunk):
                        yielded = True
                        yield event
                yield Completed(assembler.response())
                return
            except openai.OpenAIError as exc:
                if yielded:  # the user has seen part of this reply: a retry would duplicate it
                    raise from_openai(exc, self._context(model), mid_stream=True) from exc
                await self._before_retry(attempt, exc, model, on_retry)
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
        """One non-streamed reply (compaction summaries; tools only to keep the chat's prefix)."""
        import openai

        kwargs: dict[str, Any] = {"model": model, "messages": list(messages), **self._limit(max_tokens)}
        if tools:
            kwargs["tools"] = list(tools)
        if tool_choice:
            kwargs["tool_choice"] = tool_choice
        attempt = 0
        while True:
            attempt += 1
            try:
                completion = await self._post_chat(kwargs, stream=False)
                return response_from_completion(completion)
            except openai.OpenAIError as exc:
                await self._before_retry(attempt, exc, model, on_retry)
