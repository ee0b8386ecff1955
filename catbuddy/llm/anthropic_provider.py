"""The native Anthropic Messages provider (``provider = "anthropic"``), through the ``anthropic`` SDK.

It keeps the OpenAI-compatible provider's contract and machinery (``Provider``: its three clocks, its
retries that are shown and never repeat streamed output, nothing but ``LLMError`` leaving a call) and
swaps the wire: the request is built by ``anthropic_wire`` (cached system and tool blocks, thinking
blocks with their signatures passed back), the stream is the Messages events, and the SDK's errors
are mapped onto catbuddy's: 529 overloaded and 5xx retried, 429 honouring retry-after, "prompt is too
long" a context overflow the loop compacts for. ``anthropic`` is imported on first use.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from catbuddy.llm.anthropic_wire import MessageAssembler, request_body
from catbuddy.llm.errors import (
    AuthenticationError,
    CallContext,
    ProviderError,
    _from_status,
    missing_key_hint,
)
from catbuddy.llm.faults import Fault, FaultKind, classify, interrupted
from catbuddy.llm.outgoing import without_rejected
from catbuddy.llm.protocol import Message, RetryCallback
from catbuddy.llm.provider import Provider, _check_not_empty, _report
from catbuddy.llm.types import (
    Completed,
    LLMResponse,
    ProviderEvent,
    ReasoningChunk,
    StreamEvent,
    TextChunk,
    ToolCallProgress,
    Usage,
    assistant_message,
    tool_call_dict,
    unique_call_ids,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from catbuddy.config import Settings

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
RETRYABLE = frozenset({408, 409, 429})
OVERLOADED = 529


class AnthropicProvider(Provider):
    def __init__(self, settings: Settings, **kwargs: Any) -> None:
        if not settings.api_key and not settings.base_url:
            raise AuthenticationError(
                f"No API key configured: {ANTHROPIC_BASE_URL} needs one, and neither `api_key` in "
                f"config.toml nor {settings.api_key_env} is set.",
                missing_key_hint(settings.api_key_env),
            )
        # The SDK adds /v1/messages itself: an OpenAI-style base URL ending in /v1 loses that suffix.
        base_url = (settings.base_url or ANTHROPIC_BASE_URL).rstrip("/").removesuffix("/v1")
        super().__init__(replace(settings, base_url=base_url), **kwargs)
        self._anthropic: AsyncAnthropic | None = None

    def __repr__(self) -> str:
        return f"AnthropicProvider(base_url={self.base_url!r})"

    @property
    def client(self) -> Any:
        if self._anthropic is None:
            from anthropic import AsyncAnthropic

            self._anthropic = AsyncAnthropic(
                api_key=self._api_key, base_url=self.base_url, timeout=self.timeout, max_retries=0
            )
        return self._anthropic

    async def aclose(self) -> None:
        if self._anthropic is not None:
            await self._anthropic.close()
            self._anthropic = None

    def _body(
        self,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Message] | None,
        max_tokens: int | None,
        effort: str,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        options = self.settings.options_for(model)
        return request_body(
            model=model,
            messages=messages,
            tools=tools,
            max_tokens=max_tokens or self.settings.model_spec(model).max_output_tokens,
            effort=effort,
            cache=options.cache_breakpoints is not False,
            tool_choice=tool_choice,
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
        effort = (
            self.settings.options_for(model).reasoning_effort
            if reasoning_effort is None
            else reasoning_effort
        )
        body = {**self._body(model, messages, tools, max_tokens, effort), "stream": True}
        ctx = self._context(model)
        attempt = 0
        dropped: set[str] = set()
        while True:
            attempt += 1
            assembler = MessageAssembler()
            yielded = False
            try:
                async for event in self._messages_attempt(body, assembler):
                    yielded = True
                    yield event
                response = _response(assembler)
                _check_not_empty(response, ctx, events=assembler.events, choices=1)
                yield Completed(response)
                return
            except Exception as exc:  # every fault, whatever raised it, becomes an LLMError
                fault = classify_anthropic(exc, ctx)
                if yielded and fault.kind is not FaultKind.EMPTY:
                    cut = interrupted(fault, ctx, assembler.text)
                    self._log_failure(attempt, exc, Fault(fault.kind, False, fault.reason, cut))
                    raise cut from exc
                retry = without_rejected(body, exc, dropped)
                if retry is not None:
                    body, reason = retry
                    attempt -= 1
                    await _report(on_retry, attempt + 1, 0.0, reason.format(model=model))
                    continue
                await self._before_retry(attempt, exc, fault, on_retry)

    async def _messages_attempt(
        self, body: dict[str, Any], assembler: MessageAssembler
    ) -> AsyncIterator[StreamEvent]:
        from anthropic import Timeout

        deadline = self._deadline()
        timeout = Timeout(self.timeout, connect=self.connect_timeout, read=self.idle_timeout)
        stream = None
        try:
            stream = await self._within(deadline, self.client.messages.create(**body, timeout=timeout))
            while True:
                try:
                    event = await self._within(deadline, stream.__anext__())
                except StopAsyncIteration:
                    return
                data = event.model_dump() if hasattr(event, "model_dump") else dict(event)
                kind, text, index = assembler.feed(data)
                if kind == "text" and text:
                    yield TextChunk(text)
                elif kind == "reasoning" and text:
                    yield ReasoningChunk(text)
                elif kind == "tool" and index is not None:
                    block = assembler.blocks[index]
                    yield ToolCallProgress(index, block.id, block.name, assembler.tool_chars(index))
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
        """One non-streamed reply (compaction summaries): no thinking asked for."""
        body = self._body(model, messages, tools, max_tokens, "", tool_choice)
        ctx = self._context(model, streaming=False)
        attempt = 0
        dropped: set[str] = set()
        while True:
            attempt += 1
            try:
                message = await self._within(self._deadline(), self.client.messages.create(**body))
                response = _response(_assembled(message.model_dump()))
                _check_not_empty(response, ctx, events=None, choices=1)
                return response
            except Exception as exc:  # every fault, whatever raised it, becomes an LLMError
                retry = without_rejected(body, exc, dropped)
                if retry is not None:
                    body, reason = retry
                    attempt -= 1
                    await _report(on_retry, attempt + 1, 0.0, reason.format(model=model))
                    continue
                await self._before_retry(attempt, exc, classify_anthropic(exc, ctx), on_retry)


def _assembled(message: dict[str, Any]) -> MessageAssembler:
    """A whole (unstreamed) Message read as the events that would have streamed it."""
    assembler = MessageAssembler()
    assembler.feed({"type": "message_start", "message": {**message, "content": []}})
    for index, block in enumerate(message.get("content") or []):
        assembler.feed({"type": "content_block_start", "index": index, "content_block": block})
        if block.get("type") == "thinking":
            assembler.blocks[index].text.append(str(block.get("thinking") or ""))
        elif block.get("type") == "tool_use":
            assembler.blocks[index].text.append(json.dumps(block.get("input") or {}))
    assembler.feed(
        {"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")}, "usage": {}}
    )
    return assembler


def _response(assembler: MessageAssembler) -> LLMResponse:
    calls = unique_call_ids([tool_call_dict(i, n, a) for i, n, a in assembler.tool_calls()])
    message = assistant_message(assembler.text, calls, assembler.reasoning, assembler.details())
    # Anthropic's input_tokens leave out what the cache read or wrote; catbuddy's prompt tokens are all of it.
    prompt = assembler.input_tokens + assembler.cache_read + assembler.cache_write
    usage = Usage(prompt or None, assembler.output_tokens, assembler.cache_read, assembler.cache_write)
    return LLMResponse(message, assembler.finish_reason, usage if prompt else None, assembler.model)


def _error_type(exc: Any) -> str:
    body = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) else None
    return str(inner.get("type") or "") if isinstance(inner, dict) else ""


def classify_anthropic(exc: BaseException, ctx: CallContext) -> Fault:
    """The fault behind an attempt's exception, for the anthropic SDK's errors (never raises)."""
    try:
        import anthropic
    except ImportError:  # pragma: no cover - a dependency; a broken install still gets an error
        return classify(exc, ctx)
    if not isinstance(exc, anthropic.APIStatusError):
        return classify(exc, ctx)  # timeouts, broken connections, our own errors: the shared rules
    status = exc.status_code
    if _error_type(exc) == "overloaded_error":  # also sent as an error event inside a 200 stream
        status = OVERLOADED
    if status == OVERLOADED:
        error = ProviderError(
            ctx.scrub(f"Anthropic is overloaded (529) and could not answer for `{ctx.model}`."),
            "Anthropic's servers are busy; try again in a minute (catbuddy already retried).",
            status=status,
        )
        return Fault(FaultKind.STATUS, True, "overloaded (529)", error)
    retryable = status in RETRYABLE or status >= 500
    reason = "rate limited (429)" if status == 429 else f"server error ({status})"
    return Fault(FaultKind.STATUS, retryable, reason, _from_status(exc, ctx))
