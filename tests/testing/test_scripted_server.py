"""The scripted OpenAI-compatible server, driven through the real (sync) openai SDK and raw httpx."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import openai
import pytest

from catbuddy.context.counting.tokens import counter_for_model
from catbuddy.testing.script import Reply, ReplySpec, ToolCallSpec
from catbuddy.testing.scripted_llm import ScriptedLLM

USER = [{"role": "user", "content": "hello"}]


def client(llm: ScriptedLLM, key: str = "test-key") -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url, api_key=key, max_retries=0)


def sse_chunks(llm: ScriptedLLM, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The raw SSE data of one streamed request, [DONE] checked and removed."""
    payloads = []
    with httpx.stream("POST", f"{llm.base_url}/chat/completions", json=body, timeout=5) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                payloads.append(line.removeprefix("data: "))
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def test_each_server_picks_a_free_port() -> None:
    with ScriptedLLM() as first, ScriptedLLM() as second:
        assert first.port != second.port
        assert first.base_url == f"http://127.0.0.1:{first.port}/v1"


def test_streamed_text_arrives_in_chunk_size_deltas() -> None:
    with ScriptedLLM([Reply.text("Hello there, friend!", chunk_size=5)]) as llm:
        stream = client(llm).chat.completions.create(model="scripted", messages=USER, stream=True)
        deltas = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert deltas == ["Hello", " ther", "e, fr", "iend!"]


def test_tool_call_head_carries_id_and_name_then_argument_fragments() -> None:
    reply = Reply.tool_call("read_file", {"path": "src/app.py"}, id="call_x", chunk_size=4)
    with ScriptedLLM([reply]) as llm:
        chunks = sse_chunks(llm, {"model": "m", "messages": USER, "stream": True})
    calls = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in chunks
        if c["choices"][0]["delta"].get("tool_calls")
    ]
    assert calls[0] == {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "read_file", "arguments": ""},
    }
    fragments = [c["function"]["arguments"] for c in calls[1:]]
    assert all("id" not in c and "name" not in c["function"] for c in calls[1:])
    assert len(fragments) > 3 and "".join(fragments) == '{"path": "src/app.py"}'
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_parallel_tool_calls_use_distinct_indexes_and_ids() -> None:
    reply = Reply.tool_calls(("list_dir", {"path": "."}), ("read_file", {"path": "a.py"}))
    with ScriptedLLM([reply]) as llm:
        chunks = sse_chunks(llm, {"model": "m", "messages": USER, "stream": True})
    heads = [
        d["tool_calls"][0]
        for c in chunks
        if (d := c["choices"][0]["delta"]).get("tool_calls") and "id" in d["tool_calls"][0]
    ]
    assert [h["index"] for h in heads] == [0, 1]
    assert heads[0]["id"] != heads[1]["id"]


def test_interleaved_parallel_calls_alternate_fragments() -> None:
    reply = Reply.tool_calls(("a", {"x": "1234567890"}), ("b", {"y": "abcdefghij"}), chunk_size=3)
    reply = ReplySpec(tool_calls=reply.tool_calls, chunk_size=3, interleave_tool_calls=True)
    with ScriptedLLM([reply]) as llm:
        chunks = sse_chunks(llm, {"model": "m", "messages": USER, "stream": True})
    order = [
        c["choices"][0]["delta"]["tool_calls"][0]["index"]
        for c in chunks
        if c["choices"][0]["delta"].get("tool_calls")
    ]
    assert order[:4] == [0, 1, 0, 1]


def test_usage_chunk_only_when_include_usage_is_set() -> None:
    with ScriptedLLM([Reply.text("hi"), Reply.text("hi")]) as llm:
        plain = sse_chunks(llm, {"model": "m", "messages": USER, "stream": True})
        with_usage = sse_chunks(
            llm, {"model": "m", "messages": USER, "stream": True, "stream_options": {"include_usage": True}}
        )
    assert all("usage" not in c for c in plain)
    last = with_usage[-1]
    assert last["choices"] == []
    expected_prompt = counter_for_model("m").count_request(USER)
    assert last["usage"] == {
        "prompt_tokens": expected_prompt,
        "completion_tokens": 1,
        "total_tokens": expected_prompt + 1,
        "prompt_tokens_details": {"cached_tokens": 0},  # a short prompt is never cached
    }
    assert all(c["usage"] is None for c in with_usage[:-1])


def test_non_streamed_request_gets_a_chat_completion_with_usage() -> None:
    reply = Reply.tool_call("list_dir", {"path": "."}, text="Looking.")
    with ScriptedLLM([reply]) as llm:
        completion = client(llm).chat.completions.create(model="scripted", messages=USER)
    message = completion.choices[0].message
    assert message.content == "Looking."
    assert message.tool_calls[0].function.name == "list_dir"
    assert json.loads(message.tool_calls[0].function.arguments) == {"path": "."}
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.prompt_tokens == counter_for_model("scripted").count_request(USER)


def test_prompt_token_factor_inflates_reported_prompt_tokens() -> None:
    with ScriptedLLM([Reply.text("ok")], prompt_token_factor=1.5) as llm:
        completion = client(llm).chat.completions.create(model="scripted", messages=USER)
    counted = counter_for_model("scripted").count_request(USER)
    assert completion.usage.prompt_tokens == -(-counted * 3 // 2)


def test_error_reply_has_openai_body_and_retry_after_headers() -> None:
    with ScriptedLLM([Reply.error(429, "slow down", retry_after=1.5)]) as llm:
        response = httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 429
    assert response.json() == {
        "error": {"message": "slow down", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    }
    assert response.headers["retry-after"] == "2"
    assert response.headers["retry-after-ms"] == "1500"


def test_sdk_raises_the_matching_exception_for_error_replies() -> None:
    script = [Reply.context_length_exceeded(), Reply.error(500), Reply.error(404, code="model_not_found")]
    with ScriptedLLM(script) as llm:
        sdk = client(llm)
        with pytest.raises(openai.BadRequestError) as bad:
            sdk.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.InternalServerError):
            sdk.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.NotFoundError):
            sdk.chat.completions.create(model="m", messages=USER)
    assert bad.value.code == "context_length_exceeded"


def test_every_request_is_recorded_without_the_authorization_value() -> None:
    with ScriptedLLM([Reply.text("a"), Reply.text("b")]) as llm:
        tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
        sdk = client(llm, key="sk-very-secret-key")
        sdk.chat.completions.create(model="scripted", messages=USER, tools=tools)
        sdk.chat.completions.create(model="other", messages=[*USER, {"role": "assistant", "content": "a"}])
        first, second = llm.requests
    assert first["messages"] == USER and first.tools == tools
    assert second.model == "other" and len(second.messages) == 2
    assert first.headers["authorization"] == "<redacted>"
    assert "sk-very-secret-key" not in json.dumps([first.headers, second.headers])
    assert [r.outcome for r in (first, second)] == ["completed", "completed"]
    assert [r.reply_no for r in (first, second)] == [1, 2]


def test_replies_pushed_later_are_used_in_order() -> None:
    with ScriptedLLM([Reply.text("one")], strict=True) as llm:
        llm.push(Reply.text("two"), "three")
        sdk = client(llm)
        texts = [
            sdk.chat.completions.create(model="m", messages=USER).choices[0].message.content for _ in range(3)
        ]
        assert llm.remaining == 0
    assert texts == ["one", "two", "three"]


def test_clear_script_drops_the_queued_replies_so_the_next_run_starts_fresh() -> None:
    with ScriptedLLM([Reply.text("stale"), Reply.text("stale too")], strict=True) as llm:
        assert llm.clear_script() == 2 and llm.remaining == 0
        llm.push(Reply.text("fresh"))
        reply = client(llm).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "fresh"
        assert llm.clear_script() == 0


def test_each_request_records_when_it_was_received() -> None:
    with ScriptedLLM([Reply.text("a"), Reply.text("b")]) as llm:
        sdk = client(llm)
        before = time.perf_counter()
        sdk.chat.completions.create(model="m", messages=USER)
        between = time.perf_counter()
        sdk.chat.completions.create(model="m", messages=USER)
        first, second = llm.requests
    assert before <= first.received <= between <= second.received


def test_a_responder_sees_the_request_and_chooses_the_reply() -> None:
    def responder(request: dict[str, Any]) -> ReplySpec:
        return Reply.text(f"you sent {len(request['messages'])} messages")

    with ScriptedLLM([responder]) as llm:
        reply = client(llm).chat.completions.create(model="m", messages=USER * 3)
    assert reply.choices[0].message.content == "you sent 3 messages"


def test_a_failing_responder_gives_a_clear_error_instead_of_hanging() -> None:
    def responder(request: dict[str, Any]) -> ReplySpec:
        raise RuntimeError("boom")

    with ScriptedLLM([responder]) as llm, pytest.raises(openai.BadRequestError, match="boom"):
        client(llm).chat.completions.create(model="m", messages=USER)


def test_exhausted_script_echoes_the_last_user_message_without_runtime_block() -> None:
    messages = [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "show me\n\n[runtime: time=now]"},
    ]
    with ScriptedLLM() as llm:
        reply = client(llm).chat.completions.create(model="m", messages=messages)
    assert reply.choices[0].message.content == "Echo: show me"


def test_strict_mode_refuses_requests_beyond_the_script() -> None:
    with ScriptedLLM([Reply.text("only")], strict=True) as llm:
        sdk = client(llm)
        sdk.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.BadRequestError, match="script is exhausted"):
            sdk.chat.completions.create(model="m", messages=USER)
        assert llm.requests[-1].outcome == "error 400 script_exhausted"


def test_context_window_refuses_oversized_requests_without_using_a_reply() -> None:
    big = [{"role": "user", "content": "word " * 400}]
    with ScriptedLLM([Reply.text("fits")], context_window=200) as llm:
        sdk = client(llm)
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.chat.completions.create(model="m", messages=big)
        ok = sdk.chat.completions.create(model="m", messages=USER)
        assert [r.outcome for r in llm.over_budget] == ["context_length_exceeded"]
        assert llm.over_budget[0].prompt_tokens > 200
    assert refused.value.code == "context_length_exceeded"
    assert "maximum context length is 200 tokens" in refused.value.message
    assert ok.choices[0].message.content == "fits"


def test_context_window_can_count_max_tokens_too() -> None:
    with ScriptedLLM([Reply.text("a"), Reply.text("b")], context_window=100, count_max_tokens=True) as llm:
        sdk = client(llm)
        sdk.chat.completions.create(model="m", messages=USER, max_tokens=50)
        with pytest.raises(openai.BadRequestError, match="context length"):
            sdk.chat.completions.create(model="m", messages=USER, max_tokens=95)


def test_api_key_requirement_refuses_a_wrong_key() -> None:
    with ScriptedLLM([Reply.text("welcome")], api_key="right") as llm:
        with pytest.raises(openai.AuthenticationError) as refused:
            client(llm, key="wrong").chat.completions.create(model="m", messages=USER)
        reply = client(llm, key="right").chat.completions.create(model="m", messages=USER)
    assert refused.value.code == "invalid_api_key"
    assert reply.choices[0].message.content == "welcome"


def test_models_endpoint_lists_models_and_unknown_models_get_404() -> None:
    with ScriptedLLM([Reply.text("x")], models=["alpha", "beta"]) as llm:
        sdk = client(llm)
        assert [m.id for m in sdk.models.list()] == ["alpha", "beta"]
        with pytest.raises(openai.NotFoundError) as missing:
            sdk.chat.completions.create(model="gamma", messages=USER)
    assert missing.value.code == "model_not_found"


def test_disconnect_after_breaks_the_stream_for_the_client() -> None:
    with ScriptedLLM([Reply.text("a long reply " * 5, chunk_size=4, disconnect_after=3)]) as llm:
        stream = client(llm).chat.completions.create(model="m", messages=USER, stream=True)
        with pytest.raises(openai.APIConnectionError):
            for _ in stream:
                pass
        assert llm.requests[0].outcome == "dropped by script"


def test_server_notices_when_the_client_goes_away() -> None:
    with ScriptedLLM([Reply.text("x" * 200, chunk_size=1, delay=0.02)]) as llm:
        stream = client(llm).chat.completions.create(model="m", messages=USER, stream=True)
        next(iter(stream))
        stream.close()
        record = llm.requests[0]
        assert record.wait(timeout=2)
    assert record.outcome == "disconnected"


def test_close_ends_a_slow_stream_promptly() -> None:
    llm = ScriptedLLM([Reply.text("x" * 100, chunk_size=1, delay=1.0)]).start()
    with httpx.stream(
        "POST", f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER, "stream": True}
    ):
        started = time.perf_counter()
        llm.close()
        assert llm.requests[0].wait(timeout=2)
    assert time.perf_counter() - started < 5.0  # the stream had 100 s left to run


def test_tool_call_arguments_may_be_a_raw_string() -> None:
    reply = ReplySpec(tool_calls=(ToolCallSpec("edit_file", '{"path": "a.py", "old'),))
    with ScriptedLLM([reply]) as llm:
        completion = client(llm).chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].message.tool_calls[0].function.arguments == '{"path": "a.py", "old'
