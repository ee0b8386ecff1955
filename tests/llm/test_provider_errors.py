"""Errors mapped to clear messages with hints, and keys never shown."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
from provider_helpers import USER, collect

from catbuddy.config import Settings
from catbuddy.llm.errors import (
    AuthenticationError,
    EndpointUnreachable,
    ModelNotFound,
    ProviderError,
)
from catbuddy.llm.provider import Provider
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_key_and_no_base_url_names_the_variable_to_set() -> None:
    with pytest.raises(AuthenticationError) as error:
        Provider(Settings(model="gpt-4o"))
    assert "OPENAI_API_KEY" in error.value.message and "OPENAI_API_KEY" in error.value.hint


def test_no_key_names_a_custom_key_variable() -> None:
    with pytest.raises(AuthenticationError, match="DEEPSEEK_API_KEY"):
        Provider(Settings(api_key_env="DEEPSEEK_API_KEY"))


async def test_a_local_server_needs_no_key(
    scripted_llm_factory: Callable[..., ScriptedLLM], make_provider: Callable[..., Provider]
) -> None:
    llm = scripted_llm_factory([Reply.text("local")], api_key="not-needed")
    provider = make_provider(Settings(model="scripted", base_url=llm.base_url, max_retries=0))
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER))
    assert response.text == "local"


async def test_a_rejected_key_says_which_variable_to_fix_and_never_shows_the_key(
    scripted_llm_factory: Callable[..., ScriptedLLM], make_provider: Callable[..., Provider]
) -> None:
    llm = scripted_llm_factory([Reply.text("unused")], api_key="right-key")
    secret = "sk-proj-abcdef1234567890SECRET"
    provider = make_provider(llm, api_key=secret, max_retries=3)
    with pytest.raises(AuthenticationError) as error:
        await collect(provider.stream_chat(model="scripted", messages=USER))
    assert "401" in error.value.message and "OPENAI_API_KEY" in error.value.hint
    assert secret not in error.value.message + error.value.hint + str(error.value)
    assert "<redacted>" in error.value.message  # the server echoed it; we scrubbed it
    assert len(llm.requests) == 1  # a bad key is not retried
    assert secret not in repr(provider)


async def test_an_unknown_model_is_named_with_how_to_pick_another(
    scripted_llm_factory: Callable[..., ScriptedLLM], make_provider: Callable[..., Provider]
) -> None:
    llm = scripted_llm_factory([Reply.text("unused")], models=["qwen2.5-coder"])
    with pytest.raises(ModelNotFound) as error:
        await collect(make_provider(llm, max_retries=2).stream_chat(model="gpt-9", messages=USER))
    assert "`gpt-9`" in error.value.message and error.value.model == "gpt-9"
    assert "/model" in error.value.hint and "CATBUDDY_MODEL" in error.value.hint


async def test_a_wrong_path_suggests_checking_the_base_url(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    base_without_v1 = scripted_llm.base_url.removesuffix("/v1")
    provider = make_provider(scripted_llm, base_url=base_without_v1)
    with pytest.raises(ProviderError) as error:
        await provider.complete(model="scripted", messages=USER)
    assert "/v1" in error.value.hint
    assert scripted_llm.requests == []


async def test_an_unreachable_endpoint_is_named_after_one_retry(make_provider: Callable[..., Provider]) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    retries: list[int] = []
    provider = make_provider(Settings(base_url=base_url, api_key="k", max_retries=4))
    with pytest.raises(EndpointUnreachable) as error:
        await collect(
            provider.stream_chat(
                model="m", messages=USER, on_retry=lambda attempt, *_: retries.append(attempt)
            )
        )
    assert base_url in error.value.message and error.value.base_url == base_url
    assert "OPENAI_BASE_URL" in error.value.hint
    assert "connection refused" in error.value.message
    assert retries == [1]  # a refused connection is retried once, not max_retries times


async def test_other_rejections_carry_the_servers_message(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.error(400, "Invalid schema for function 'read_file'", param="tools[0]"))
    with pytest.raises(
        ProviderError, match=r"rejected the request \(400\): Invalid schema for function 'read_file'"
    ):
        await collect(make_provider(scripted_llm, max_retries=3).stream_chat(model="scripted", messages=USER))
    assert len(scripted_llm.requests) == 1


async def test_a_context_message_without_a_code_is_still_recognised(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    from catbuddy.llm.errors import ContextLengthExceeded

    # vLLM and llama.cpp say so in words, without OpenAI's code
    scripted_llm.push(
        Reply.error(400, "This model's maximum context length is 4096 tokens. However, you requested 5000")
    )
    with pytest.raises(ContextLengthExceeded):
        await make_provider(scripted_llm).complete(model="scripted", messages=USER)


class _Answer:
    """Just enough of an HTTP error for retry_after_seconds: a response with headers."""

    def __init__(self, headers: dict[str, str]) -> None:
        self.response = type("Response", (), {"headers": headers})()


def test_retry_after_is_read_from_ms_seconds_or_an_http_date() -> None:
    from catbuddy.llm.errors import retry_after_seconds

    assert retry_after_seconds(_Answer({"retry-after-ms": "250", "retry-after": "1"})) == 0.25
    assert retry_after_seconds(_Answer({"retry-after": "3"})) == 3.0
    when = retry_after_seconds(_Answer({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}), now=1445412480.0)
    assert when == 10.0
    assert retry_after_seconds(_Answer({"retry-after": "soon"})) is None
    assert retry_after_seconds(_Answer({})) is None
