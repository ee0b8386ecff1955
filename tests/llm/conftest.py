"""Providers pointed at a scripted server, with retry delays short enough for tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from provider_helpers import FAST_BACKOFF

from catbuddy.config import Settings
from catbuddy.llm.provider import Provider
from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.testing.scripted_llm import ScriptedLLM


@pytest.fixture
async def make_provider() -> AsyncIterator[Callable[..., Provider]]:
    """``make_provider(llm_or_settings, **settings_overrides)``; every provider is closed after the test."""
    made: list[Provider] = []

    def factory(target: ScriptedLLM | Settings, **overrides: Any) -> Provider:
        settings = target.settings(**overrides) if isinstance(target, ScriptedLLM) else target
        provider = Provider(settings, backoff_base=FAST_BACKOFF, retry_after_cap=1.0)
        made.append(provider)
        return provider

    yield factory
    for provider in made:
        await provider.aclose()
