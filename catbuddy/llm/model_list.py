"""`/model` without an argument: the models the endpoint serves (``GET /models``), configured ones first.

Endpoints differ: OpenAI, OpenRouter, Ollama, vLLM and llama.cpp list their models; some proxies and
gateways answer 404 or an empty list. Either way the picker still shows the configured models, and the
user is told plainly why the endpoint's list is missing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from catbuddy.redact import redact_text

if TYPE_CHECKING:
    from catbuddy.config import Settings

LIST_TIMEOUT = 10.0  # seconds: the picker should not wait longer than this for a list


@dataclass
class ModelList:
    names: list[str] = field(default_factory=list)  # the endpoint's models, configured ones first
    problem: str = ""  # why the endpoint gave no list ("" when it did)


def ordered(current: str, configured: list[str], served: list[str]) -> list[str]:
    """The current model, then the configured ones, then the endpoint's others (sorted), each once."""
    names: list[str] = []
    for name in [current, *configured, *sorted(served)]:
        if name and name not in names:
            names.append(name)
    return names


async def endpoint_models(settings: Settings, timeout: float = LIST_TIMEOUT) -> ModelList:
    """The endpoint's model ids (unsorted, as served), or the reason there are none."""
    from catbuddy.llm.provider import Provider

    def build() -> Provider:
        if settings.provider == "anthropic":  # Anthropic's SDK lists its models the same way
            from catbuddy.llm.anthropic_provider import AnthropicProvider

            return AnthropicProvider(settings)
        return Provider(settings)

    try:
        provider = await asyncio.to_thread(build)
    except Exception as exc:  # no key for OpenAI: say so
        return ModelList(problem=str(exc))
    try:
        page = await asyncio.wait_for(provider.client.models.list(), timeout)
        names = [model.id for model in page.data if getattr(model, "id", None)]
    except TimeoutError:
        return ModelList(problem=f"{provider.base_url}/models did not answer within {timeout:g} s")
    except Exception as exc:  # 404, 401, a gateway's HTML: the endpoint has no usable list
        status = getattr(exc, "status_code", None)
        why = f"HTTP {status}" if status else type(exc).__name__
        detail = redact_text(str(exc), settings.held_secrets())[:200]
        return ModelList(problem=f"{provider.base_url}/models gave no model list ({why}: {detail})")
    finally:
        await provider.aclose()
    if not names:
        return ModelList(problem=f"{provider.base_url}/models listed no models")
    return ModelList(names)
