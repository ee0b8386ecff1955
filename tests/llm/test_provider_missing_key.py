"""A key that is missing is reported as missing, at once: never as "incorrect", never after retries.

Only the server decides that a key is needed: a keyless local endpoint keeps working with none."""

from __future__ import annotations

import pytest
from provider_helpers import USER, collect

from catbuddy.config import Settings
from catbuddy.llm.errors import AuthenticationError
from catbuddy.llm.provider import Provider
from catbuddy.testing.script import Reply

MISSING = "No API key configured"


async def fail_stream(provider: Provider) -> tuple[AuthenticationError, list[int]]:
    retries: list[int] = []
    with pytest.raises(AuthenticationError) as caught:
        await collect(
            provider.stream_chat(model="scripted", messages=USER, on_retry=lambda a, d, r: retries.append(a))
        )
    return caught.value, retries


async def test_a_server_that_wants_a_key_and_got_none_says_it_is_missing(scripted_llm_factory, make_provider):
    llm = scripted_llm_factory([Reply.text("never sent")], api_key="the-real-key")
    provider = make_provider(llm, api_key=None, max_retries=4)

    error, retries = await fail_stream(provider)

    assert MISSING in error.message and llm.base_url in error.message
    assert "Incorrect API key" not in error.message and "rejected" not in error.message
    assert "OPENAI_API_KEY" in error.message and "export OPENAI_API_KEY=" in error.hint
    assert "config.toml" in error.hint and "set-up screen" in error.hint
    assert error.status == 401
    assert retries == [] and len(llm.requests) == 1  # an auth error is never retried


async def test_the_missing_key_names_the_variable_the_config_names(scripted_llm_factory, make_provider):
    llm = scripted_llm_factory([], api_key="k")
    provider = make_provider(llm, api_key=None, api_key_env="OPENROUTER_API_KEY")

    error, _ = await fail_stream(provider)

    assert "OPENROUTER_API_KEY" in error.message and "export OPENROUTER_API_KEY=" in error.hint


@pytest.mark.parametrize("status", [401, 403])
async def test_a_401_or_403_without_a_configured_key_is_the_missing_key(scripted_llm, make_provider, status):
    scripted_llm.push(Reply.error(status, "Incorrect API key provided: not-needed.", code="invalid_api_key"))
    provider = make_provider(scripted_llm, api_key=None, max_retries=4)

    error, retries = await fail_stream(provider)

    assert MISSING in error.message and f"(it answered {status})" in error.message
    assert retries == [] and len(scripted_llm.requests) == 1


async def test_a_wrong_key_is_still_reported_as_rejected(scripted_llm_factory, make_provider):
    llm = scripted_llm_factory([], api_key="the-real-key")
    provider = make_provider(llm, api_key="a-wrong-key")

    error, retries = await fail_stream(provider)

    assert "rejected the API key (401)" in error.message and MISSING not in error.message
    assert "a-wrong-key" not in error.message + error.hint
    assert retries == [] and len(llm.requests) == 1


async def test_a_403_with_a_configured_key_is_refused_access_not_missing(scripted_llm, make_provider):
    scripted_llm.push(Reply.error(403, "model not allowed for this key"))
    provider = make_provider(scripted_llm, api_key="some-key")

    error, _ = await fail_stream(provider)

    assert "refused access (403)" in error.message and MISSING not in error.message


async def test_a_keyless_local_server_works_without_any_key(scripted_llm, make_provider):
    scripted_llm.push(Reply.text("hello without a key"))
    provider = make_provider(scripted_llm, api_key=None)

    _, response = await collect(provider.stream_chat(model="scripted", messages=USER))

    assert response.text == "hello without a key"


async def test_the_unstreamed_call_reports_the_missing_key_too(scripted_llm_factory, make_provider):
    llm = scripted_llm_factory([], api_key="k")
    provider = make_provider(llm, api_key=None, max_retries=4)

    with pytest.raises(AuthenticationError) as caught:
        await provider.complete(model="scripted", messages=USER)

    assert MISSING in caught.value.message and len(llm.requests) == 1


def test_openai_without_a_key_fails_before_any_request_and_says_how_to_fix_it():
    with pytest.raises(AuthenticationError) as caught:
        Provider(Settings(model="gpt-4o", api_key=None))

    assert MISSING in caught.value.message and "OPENAI_API_KEY" in caught.value.message
    assert "export OPENAI_API_KEY=" in caught.value.hint and "base_url" in caught.value.hint
