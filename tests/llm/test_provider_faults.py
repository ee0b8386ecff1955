"""Provider faults injected by the scripted server: each ends in an LLMError with a message and a hint.

Malformed chunks, stalls, answers with nothing in them and broken tool-call ids, streamed and not;
refused connections and unknown hosts without any server. Nothing but an ``LLMError`` may leave the
provider, and nothing is retried once text has reached the user.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest
from provider_helpers import USER, collect

from catbuddy.config import Settings
from catbuddy.llm.errors import (
    EmptyResponse,
    EndpointUnreachable,
    LLMError,
    MalformedResponse,
    ProviderError,
    StreamInterrupted,
)
from catbuddy.llm.provider import Provider, TextChunk
from catbuddy.testing.script import Reply, ToolCallSpec
from catbuddy.testing.scripted_llm import ScriptedLLM

Retries = list[tuple[int, float, str]]


def recorder() -> tuple[Retries, Callable[[int, float, str], None]]:
    seen: Retries = []
    return seen, lambda attempt, delay, reason: seen.append((attempt, delay, reason))


async def stream_texts(provider: Provider, on_retry: Callable[..., None] | None = None) -> list[str]:
    texts: list[str] = []
    async for event in provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry):
        if isinstance(event, TextChunk):
            texts.append(event.text)
    return texts


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- malformed chunks -----------------------------------------------------------------------------


async def test_a_malformed_first_chunk_is_retried_like_a_transient_fault(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(0, text="never seen"), Reply.text("second try"))
    retries, on_retry = recorder()
    provider = make_provider(scripted_llm, max_retries=2)
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert response.text == "second try"
    assert [reason for _, _, reason in retries] == ["malformed response"]


async def test_a_malformed_first_chunk_that_persists_names_the_endpoint(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(0, text="x"), Reply.malformed(0, text="x"))
    with pytest.raises(MalformedResponse) as error:
        await collect(make_provider(scripted_llm, max_retries=1).stream_chat(model="scripted", messages=USER))
    assert scripted_llm.base_url in error.value.message and "malformed" in error.value.message
    assert "OpenAI chat format" in error.value.hint
    assert error.value.partial_text == ""
    assert len(scripted_llm.requests) == 2


async def test_a_malformed_chunk_mid_stream_ends_the_call_keeping_the_text_that_arrived(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(3, text="partial reply text", chunk_size=4), Reply.text("unused"))
    shown: list[str] = []
    provider = make_provider(scripted_llm, max_retries=3)
    with pytest.raises(StreamInterrupted) as error:
        async for event in provider.stream_chat(model="scripted", messages=USER):
            if isinstance(event, TextChunk):
                shown.append(event.text)
    # the role chunk, then two text chunks, then the broken one
    assert shown == ["part", "ial "]
    assert error.value.partial_text == "partial "
    assert "malformed chunk while the reply was streaming" in error.value.message
    assert "cut off" in error.value.hint
    assert len(scripted_llm.requests) == 1  # the user saw text: a retry would repeat it


@pytest.mark.parametrize(
    "data",
    [
        '{"choices": "oops"}',
        '{"choices": [{"index": 0, "delta": "text"}]}',
        '{"choices": [{"index": 0, "delta": {"content": 5}}]}',
        '{"choices": [{"index": 0, "delta": {"tool_calls": "read_file"}}]}',
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "first"}]}}]}',
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}',
        '{"choices": [{"index": 0, "delta": {}, "finish_reason": 7}]}',
        '{"choices": [], "usage": 12}',
        "[1, 2, 3]",
        '"just a string"',
        "null",
        "\x00\x01 binary",
    ],
)
async def test_a_chunk_of_the_wrong_shape_is_a_malformed_response_error(
    data: str, scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(0, data))
    with pytest.raises(MalformedResponse):
        await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))


async def test_an_error_event_inside_the_stream_is_reported_with_the_providers_words(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(0, '{"error": {"message": "upstream model crashed"}}'))
    with pytest.raises(ProviderError, match="upstream model crashed"):
        await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))


async def test_an_unstreamed_body_that_is_not_json_is_retried_then_reported(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.malformed(0), Reply.malformed(0))
    retries, on_retry = recorder()
    with pytest.raises(MalformedResponse, match="malformed response"):
        await make_provider(scripted_llm, max_retries=1).complete(
            model="scripted", messages=USER, on_retry=on_retry
        )
    assert len(retries) == 1 and len(scripted_llm.requests) == 2


# --- stalls ---------------------------------------------------------------------------------------


async def test_a_server_that_never_answers_is_given_up_on_after_the_idle_timeout_and_one_retry(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.stall(0), Reply.stall(0), Reply.text("unused"))
    retries, on_retry = recorder()
    provider = make_provider(scripted_llm, max_retries=4, stream_idle_timeout=0.3)
    with pytest.raises(ProviderError) as error:
        await collect(provider.stream_chat(model="scripted", messages=USER, on_retry=on_retry))
    assert "sent nothing for 0.3 s (stream_idle_timeout)" in error.value.message
    assert "stream_idle_timeout" in error.value.hint
    assert [reason for _, _, reason in retries] == ["no data for 0.3 s"]  # one retry, not max_retries
    first = scripted_llm.requests[0]
    assert first.wait() and first.outcome == "stalled (client gave up)"  # the connection was closed


async def test_a_stream_that_stops_midway_ends_the_call_keeping_the_text(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.stall(3, text="half of an answer", chunk_size=5), Reply.text("unused"))
    provider = make_provider(scripted_llm, max_retries=2, stream_idle_timeout=0.3)
    with pytest.raises(StreamInterrupted) as error:
        await stream_texts(provider)
    assert error.value.partial_text == "half of an"
    assert "stopped sending while the reply was streaming" in error.value.message
    assert len(scripted_llm.requests) == 1


async def test_the_idle_timeout_does_not_cut_a_slow_stream_that_keeps_sending(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    # Each chunk comes well within the idle timeout, though the whole stream takes longer than it.
    scripted_llm.push(Reply.text("slow but steady", chunk_size=2, delay=0.1))
    provider = make_provider(scripted_llm, stream_idle_timeout=0.5)
    _, response = await collect(provider.stream_chat(model="scripted", messages=USER))
    assert response.text == "slow but steady"


async def test_keep_alive_bytes_keep_a_stream_open_until_the_request_timeout(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    # The idle timeout counts bytes, not events: a server pinging with SSE comments (as proxies do
    # while a model thinks) is not idle. Only the total request_timeout ends it, and is not retried.
    scripted_llm.push(Reply.stall(1, keepalive=0.1), Reply.text("unused"))
    provider = make_provider(scripted_llm, max_retries=3, stream_idle_timeout=0.4, request_timeout=1.5)
    with pytest.raises(ProviderError, match=r"did not finish the reply within 1.5 s \(request_timeout\)"):
        await collect(provider.stream_chat(model="scripted", messages=USER))
    assert len(scripted_llm.requests) == 1


async def test_an_unstreamed_call_that_never_answers_ends_at_the_request_timeout(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.stall(0), Reply.text("unused"))
    provider = make_provider(scripted_llm, max_retries=3, request_timeout=0.3)
    with pytest.raises(ProviderError, match=r"did not finish the reply within 0.3 s"):
        await provider.complete(model="scripted", messages=USER)
    assert len(scripted_llm.requests) == 1


# --- answers with nothing in them -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply.no_choices(), "without any choices"),
        (Reply.empty(), "empty reply (no text and no tool calls)"),
        (Reply.no_events(), "empty stream (no events)"),
        (Reply.empty(finish_reason="length"), "whole output budget"),
        (Reply.empty(finish_reason="content_filter"), "filtered"),
    ],
)
async def test_a_stream_with_nothing_in_it_is_an_error_not_an_empty_message(
    reply: object, words: str, scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(reply, Reply.text("unused"))  # type: ignore[arg-type]
    with pytest.raises(EmptyResponse) as error:
        await collect(make_provider(scripted_llm, max_retries=3).stream_chat(model="scripted", messages=USER))
    assert words in error.value.message and error.value.hint
    assert len(scripted_llm.requests) == 1  # the same question would get the same nothing


@pytest.mark.parametrize(
    ("reply", "error_type", "words"),
    [
        (Reply.no_choices(), EmptyResponse, "without any choices"),
        (Reply.empty(), EmptyResponse, "empty reply"),
        (Reply.no_events(), MalformedResponse, "malformed response"),
    ],
)
async def test_an_unstreamed_answer_with_nothing_in_it_is_an_error(
    reply: object,
    error_type: type[LLMError],
    words: str,
    scripted_llm: ScriptedLLM,
    make_provider: Callable[..., Provider],
) -> None:
    scripted_llm.push(reply)  # type: ignore[arg-type]
    with pytest.raises(error_type, match=words):
        await make_provider(scripted_llm).complete(model="scripted", messages=USER)


# --- tool-call ids --------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["duplicate", "missing", "empty"])
async def test_broken_tool_call_ids_are_made_unique(
    fault: str, scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(
        Reply.tool_calls(("read_file", {"path": "a"}), ("read_file", {"path": "b"}), tool_call_ids=fault)
    )
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    ids = [call["id"] for call in response.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2 and all(isinstance(i, str) and i for i in ids)
    assert [call["function"]["arguments"] for call in response.tool_calls] == [
        '{"path": "a"}',
        '{"path": "b"}',
    ]


async def test_explicitly_repeated_ids_keep_the_first_and_renumber_the_rest(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(
        Reply.tool_calls(ToolCallSpec("read_file", {"path": "a"}, id="x"), ToolCallSpec("grep", {}, id="x"))
    )
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    first, second = response.tool_calls
    assert first["id"] == "x" and second["id"] != "x" and second["function"]["name"] == "grep"


async def test_unstreamed_tool_calls_with_duplicate_ids_are_made_unique(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.tool_calls(("a", {}), ("b", {}), ("c", {}), tool_call_ids="duplicate"))
    response = await make_provider(scripted_llm).complete(model="scripted", messages=USER)
    assert len({call["id"] for call in response.tool_calls}) == 3


# --- connecting -----------------------------------------------------------------------------------


async def test_a_refused_connection_fails_fast_with_one_short_retry(
    make_provider: Callable[..., Provider],
) -> None:
    base_url = f"http://127.0.0.1:{closed_port()}/v1"
    retries, on_retry = recorder()
    provider = make_provider(Settings(base_url=base_url, api_key="k", max_retries=4))
    with pytest.raises(EndpointUnreachable) as error:
        await provider.complete(model="m", messages=USER, on_retry=on_retry)
    assert "connection refused" in error.value.message and base_url in error.value.message
    assert "base URL" in error.value.hint
    assert len(retries) == 1 and retries[0][1] <= 0.25 and retries[0][2] == "connection refused"


async def test_an_unknown_host_is_named_after_at_most_one_retry(
    make_provider: Callable[..., Provider],
) -> None:
    base_url = "http://catbuddy-no-such-host.invalid/v1"
    retries, on_retry = recorder()
    provider = make_provider(Settings(base_url=base_url, api_key="k", max_retries=4))
    with pytest.raises(EndpointUnreachable) as error:
        await collect(provider.stream_chat(model="m", messages=USER, on_retry=on_retry))
    assert "'catbuddy-no-such-host.invalid' cannot be resolved" in error.value.message
    assert "DNS" in error.value.hint
    assert len(retries) <= 1 and all(delay <= 0.25 for _, delay, _ in retries)


def test_a_connect_timeout_is_a_connect_fault_retried_once() -> None:
    import httpx

    from catbuddy.llm.errors import CallContext
    from catbuddy.llm.faults import FaultKind, classify

    ctx = CallContext("m", "http://10.255.255.1/v1", "OPENAI_API_KEY", connect_timeout=10)
    try:
        try:
            raise httpx.ConnectTimeout("timed out")
        except httpx.ConnectTimeout as inner:
            raise RuntimeError("wrapped by the SDK") from inner
    except RuntimeError as exc:
        fault = classify(exc, ctx)
    assert fault.kind is FaultKind.CONNECT and fault.retry_cap == 1
    assert "no answer to the connection attempt within 10 s" in fault.error.message
    assert "connect_timeout" in fault.error.hint


# --- text that is not UTF-8 ---------------------------------------------------------------------


async def test_a_request_with_lone_surrogates_is_sent_with_replacement_characters(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("fine"))
    messages = [{"role": "user", "content": "bad byte \udcff here"}]
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=messages))
    assert response.text == "fine"
    assert scripted_llm.requests[0].messages[0]["content"] == "bad byte \ufffd here"


async def test_a_lone_surrogate_in_streamed_text_becomes_a_replacement_character(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    # Some servers split an emoji's JSON escape across two chunks: each half alone is a lone surrogate.
    scripted_llm.push(Reply.malformed(1, '{"choices": [{"index": 0, "delta": {"content": "\\ud83d"}}]}'))
    events, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    assert response.text == "\ufffd" and [e.text for e in events if isinstance(e, TextChunk)] == ["\ufffd"]
    response.text.encode("utf-8")  # what is stored can always be written


@pytest.mark.parametrize(
    "reply",
    [
        Reply.malformed(0),
        Reply.malformed(2, text="some text here", chunk_size=3),
        Reply.malformed(0, '{"error": {"message": "boom"}}'),
        Reply.stall(0),
        Reply.stall(2, text="some text here", chunk_size=3),
        Reply.no_choices(),
        Reply.empty(),
        Reply.no_events(),
        Reply.error(400, "bad request"),
        Reply.error(500),
        Reply.text("cut", disconnect_after=2),
    ],
    ids=[
        "malformed-first",
        "malformed-mid",
        "error-event",
        "stall",
        "stall-mid",
        "no-choices",
        "empty",
        "no-events",
        "rejected",
        "server-error",
        "disconnect",
    ],
)
async def test_every_fault_ends_in_an_llm_error_with_a_message_and_a_hint(
    reply: object, scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(reply)  # type: ignore[arg-type]
    provider = make_provider(scripted_llm, max_retries=0, stream_idle_timeout=0.3)
    with pytest.raises(LLMError) as error:
        await collect(provider.stream_chat(model="scripted", messages=USER))
    assert error.value.message.strip() and error.value.hint.strip()
    assert "test-key" not in error.value.message + error.value.hint
