"""Building a ``Dreamer`` from settings and a provider: one place for the agent loop and the CLI."""

from __future__ import annotations

from collections.abc import Sequence

from catbuddy.config import Settings
from catbuddy.context.counting.tokens import counter_for
from catbuddy.llm.protocol import ProviderSource
from catbuddy.memory.apply import Limits
from catbuddy.memory.dreamer import AnswerCutOff, Complete, DreamConfig, Dreamer
from catbuddy.memory.prompt import Message
from catbuddy.workspace import Workspace


def dream_model(settings: Settings, session_model: str | None = None) -> str:
    """``memory.dream_model``, else the compact model, else the session's model."""
    return settings.memory.dream_model or settings.compact_model or session_model or settings.model_name


def dream_config(settings: Settings, model: str, secrets: Sequence[str] = ()) -> DreamConfig:
    spec = settings.model_spec(model)
    memory = settings.memory
    return DreamConfig(
        model=model,
        limits=Limits(memory.memory_max_lines, memory.memory_max_bytes),
        entry_tokens=memory.dream_entry_tokens,
        context_window=spec.context_window,
        max_output_tokens=spec.max_output_tokens,
        safety_margin=settings.context.safety_margin,
        secrets=tuple(s for s in secrets if s),
        global_user_profile=settings.context.global_user_profile,
        max_failures=memory.max_dream_failures,
    )


def provider_complete(source: ProviderSource, model: str) -> Complete:
    """One non-streamed call without tools through the ``ChatProvider`` protocol."""

    async def complete(messages: list[Message], max_tokens: int) -> str:
        provider = await source.get()
        response = await provider.complete(model=model, messages=messages, max_tokens=max_tokens)
        if response.finish_reason == "length":
            raise AnswerCutOff(response.text, max_tokens)
        return response.text

    return complete


def make_dreamer(
    workspace: Workspace,
    settings: Settings,
    source: ProviderSource,
    *,
    session_model: str | None = None,
    secrets: Sequence[str] = (),
) -> Dreamer:
    model = dream_model(settings, session_model)
    counter = counter_for(settings.encoding_for(model))
    return Dreamer(
        workspace,
        dream_config(settings, model, secrets),
        provider_complete(source, model),
        counter.count_text,
    )
