"""What the agent needs from an LLM provider: the seam between the engine and the openai SDK.

``Provider`` (the openai SDK against any OpenAI-compatible endpoint) implements it; tests may put
a fake behind it. The agent loop asks a ``ProviderSource`` for the provider, so the SDK is imported
and the client built off the event loop, once, when first needed (docs/architecture.md §7).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

from catbuddy.llm.types import LLMResponse, ProviderEvent

RetryCallback = Callable[[int, float, str], Awaitable[None] | None]
Message = dict[str, Any]


class ChatProvider(Protocol):
    def stream_chat(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[Message] | None = None,
        max_tokens: int | None = None,
        on_retry: RetryCallback | None = None,
        reasoning_effort: str | None = None,
    ) -> AsyncIterator[ProviderEvent]:
        """Yield text, reasoning and tool-call progress as the reply streams, then one ``Completed``.
        ``reasoning_effort``: the effort to ask for ("" none; None: the model's configured one)."""
        ...

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
        """One non-streamed reply (compaction summaries); ``tools`` with ``tool_choice="none"`` keeps a
        request's prefix identical to the chat's, so the provider's prompt cache serves it."""
        ...

    async def aclose(self) -> None: ...


class ProviderSource(Protocol):
    async def get(self) -> ChatProvider: ...

    async def aclose(self) -> None: ...
