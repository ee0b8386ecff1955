"""Every retry (attempt n of m, the kind and class of the error, the wait) and every final failure of a
model call reach the log file, scrubbed by the one scrubber: the key and URL passwords never appear."""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_helpers import USER, collect

from catbuddy.config import Settings
from catbuddy.llm.errors import LLMError
from catbuddy.logs import LOG_FILE, log_to_file
from catbuddy.testing.script import Reply

SECRET_KEY = "sk-proj-loggingtest0123456789abcdef"


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    """The app's log file set-up, undone after the test (it replaces the root logger's handlers)."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    log_to_file(tmp_path / "home")
    yield tmp_path / "home" / "logs" / LOG_FILE
    for handler in root.handlers:
        handler.close()
    root.handlers[:], root.level = saved


def lines(path: Path) -> list[str]:
    for handler in logging.getLogger().handlers:
        handler.flush()
    return [line for line in path.read_text().splitlines() if "catbuddy.llm.provider" in line]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_refused_connection_logs_its_retry_and_the_failure(make_provider, log_file):
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    provider = make_provider(Settings(base_url=base_url, api_key="k", max_retries=4))

    with pytest.raises(LLMError):
        await provider.complete(model="m", messages=USER)

    retry, failure = lines(log_file)
    assert f"model call to {base_url} failed (attempt 1 of 2): connection refused" in retry
    assert "[connect, APIConnectionError from ConnectionRefusedError]" in retry
    assert re.search(r"; retrying in 0\.\d\d s$", retry)  # the short connect pause (fast backoff here)
    assert "failed after 2 attempts [connect," in failure
    assert "EndpointUnreachable: Cannot connect to" in failure


async def test_server_errors_log_each_attempt_of_the_configured_retries(scripted_llm, make_provider, log_file):
    scripted_llm.push(*[Reply.error(503, "overloaded")] * 3)
    provider = make_provider(scripted_llm, max_retries=2)

    with pytest.raises(LLMError):
        await collect(provider.stream_chat(model="scripted", messages=USER))

    logged = lines(log_file)
    assert [("attempt 1 of 3" in logged[0]), ("attempt 2 of 3" in logged[1])] == [True, True]
    assert all("server error (503) [status, InternalServerError from HTTPStatusError]" in line for line in logged[:2])
    assert "failed after 3 attempts" in logged[2] and "ProviderError" in logged[2] and "overloaded" in logged[2]


async def test_a_rate_limit_logs_the_wait_the_server_asked_for(scripted_llm, make_provider, log_file):
    scripted_llm.push(Reply.error(429, "slow down", retry_after=0.5), Reply.text("ok"))
    provider = make_provider(scripted_llm, max_retries=2)

    await collect(provider.stream_chat(model="scripted", messages=USER))

    (retry,) = lines(log_file)
    assert "rate limited (429)" in retry and "retrying in 0.50 s" in retry  # and no failure line


async def test_an_error_that_is_not_retried_logs_one_failure(scripted_llm, make_provider, log_file):
    scripted_llm.push(Reply.error(400, "bad request body"))
    provider = make_provider(scripted_llm, max_retries=4)

    with pytest.raises(LLMError):
        await collect(provider.stream_chat(model="scripted", messages=USER))

    (failure,) = lines(log_file)
    assert "failed after 1 attempt [status, BadRequestError from HTTPStatusError]" in failure and "bad request body" in failure


async def test_a_stream_broken_after_output_logs_the_interruption(scripted_llm, make_provider, log_file):
    scripted_llm.push(Reply.text("a long reply that breaks", chunk_size=4, disconnect_after=2))
    provider = make_provider(scripted_llm, max_retries=4)

    with pytest.raises(LLMError):
        await collect(provider.stream_chat(model="scripted", messages=USER))

    (failure,) = lines(log_file)
    assert "failed after 1 attempt" in failure and "StreamInterrupted" in failure


async def test_malformed_chunks_are_logged_as_such(scripted_llm, make_provider, log_file):
    scripted_llm.push(Reply.malformed(0), Reply.text("fine"))
    provider = make_provider(scripted_llm, max_retries=2)

    await collect(provider.stream_chat(model="scripted", messages=USER))

    (retry,) = lines(log_file)
    assert "malformed response [malformed," in retry and "attempt 1 of 3" in retry


async def test_the_key_and_url_passwords_never_reach_the_log(scripted_llm_factory, make_provider, log_file):
    port = closed_port()
    base_url = f"http://admin:hunter2secret@127.0.0.1:{port}/v1"
    provider = make_provider(Settings(base_url=base_url, api_key=SECRET_KEY, max_retries=2))
    with pytest.raises(LLMError):
        await provider.complete(model="m", messages=USER)
    echoing = scripted_llm_factory([], api_key="the-right-key")  # its 401 quotes the key it got
    with pytest.raises(LLMError):
        await provider_for(make_provider, echoing).complete(model="scripted", messages=USER)

    text = log_file.read_text()
    assert "hunter2secret" not in text and SECRET_KEY not in text
    assert f"127.0.0.1:{port}" in text and "Incorrect API key provided" in text


def provider_for(make_provider, llm):
    return make_provider(llm, api_key=SECRET_KEY, max_retries=0)
