"""A ``ProviderSource`` that builds the provider once, in a worker thread, when first needed.

Importing the openai SDK takes about half a second; doing it in a thread keeps the event loop (and
so the TUI) responsive, and ``warm()`` lets a front end start it right after its first paint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import platform
import threading
from collections.abc import Callable

from catbuddy.config import Settings
from catbuddy.llm.protocol import ChatProvider

log = logging.getLogger(__name__)

ProviderFactory = Callable[[Settings], ChatProvider]


def openai_provider(settings: Settings) -> ChatProvider:
    """The configured provider (``provider``: the openai SDK against any OpenAI-compatible endpoint, or
    Anthropic's Messages API), its client built (and the SDK imported) in the calling thread."""
    # The SDK's first request describes the platform in its headers, and platform.platform() runs
    # `uname -p` in a subprocess (cached for the process): start it now, beside the import.
    threading.Thread(target=platform.platform, name="platform-probe", daemon=True).start()
    from catbuddy.llm.provider import Provider

    if settings.provider == "anthropic":
        from catbuddy.llm.anthropic_provider import AnthropicProvider

        provider: Provider = AnthropicProvider(settings)
    else:
        provider = Provider(settings)
    provider.client  # noqa: B018 - builds the client: the SDK import is the slow part
    return provider


class LazyProvider:
    def __init__(self, settings: Settings, factory: ProviderFactory = openai_provider) -> None:
        self.settings = settings
        self._factory = factory
        self._provider: ChatProvider | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> ChatProvider:
        async with self._lock:
            if self._provider is None:
                self._provider = await asyncio.to_thread(self._factory, self.settings)
            return self._provider

    async def warm(self) -> None:
        """Build the provider now, so the first request does not wait; errors wait for that request."""
        try:
            await self.get()
        except Exception as exc:  # e.g. no API key: the first turn reports it properly
            log.debug("provider warm-up failed: %s", exc)

    async def aclose(self) -> None:
        provider, self._provider = self._provider, None
        if provider is not None:
            with contextlib.suppress(Exception):
                await provider.aclose()
