"""The faults the scripted server injects, seen on the wire (raw httpx) and from the JSON script form."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from catbuddy.testing.script import ScriptError, reply_from_json, script_from_json
from catbuddy.testing.scripted_llm import ScriptedLLM

USER = [{"role": "user", "content": "hello"}]
STREAM = {"model": "m", "messages": USER, "stream": True, "stream_options": {"include_usage": True}}


def data_lines(llm: ScriptedLLM, body: dict[str, Any] = STREAM) -> list[str]:
    with httpx.stream("POST", f"{llm.base_url}/chat/completions", json=body, timeout=5) as response:
        assert response.status_code == 200
        return [line.removeprefix("data: ") for line in response.iter_lines() if line.startswith("data: ")]


def test_a_malformed_chunk_is_inserted_after_the_given_number_of_good_ones() -> None:
    with ScriptedLLM([{"text": "abcdef", "chunk_size": 2, "malformed_after": 2}]) as llm:
        lines = data_lines(llm)
    assert json.loads(lines[1])["choices"][0]["delta"]["content"] == "ab"  # after the role chunk
    with pytest.raises(ValueError):
        json.loads(lines[2])
    assert json.loads(lines[3])["choices"][0]["delta"]["content"] == "cd"  # the stream goes on
    assert lines[-1] == "[DONE]"


def test_malformed_data_may_be_any_raw_line() -> None:
    with ScriptedLLM([{"malformed_after": 0, "malformed_data": '{"choices": "oops"}'}]) as llm:
        assert data_lines(llm)[0] == '{"choices": "oops"}'


def test_an_unstreamed_malformed_reply_is_a_200_whose_body_is_not_json() -> None:
    with ScriptedLLM([{"malformed_after": 0}]) as llm:
        response = httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


def test_stall_zero_accepts_the_request_and_never_sends_a_status_line() -> None:
    with ScriptedLLM([{"stall_after": 0}]) as llm:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{llm.base_url}/chat/completions", json=STREAM, timeout=httpx.Timeout(5, read=0.3))
        record = llm.requests[0]
        assert record.wait(timeout=5)
    assert record.outcome == "stalled (client gave up)"


def test_a_stall_mid_stream_sends_headers_and_some_chunks_then_nothing() -> None:
    with ScriptedLLM([{"text": "abcdef", "chunk_size": 2, "stall_after": 2}]) as llm:
        received: list[str] = []
        timeout = httpx.Timeout(5, read=0.3)
        with httpx.stream(
            "POST", f"{llm.base_url}/chat/completions", json=STREAM, timeout=timeout
        ) as response:
            assert response.status_code == 200
            with pytest.raises(httpx.ReadTimeout):
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        received.append(line)
        assert len(received) == 2 and llm.requests[0].wait(timeout=5)


def test_a_stall_with_keepalive_sends_sse_comments_and_no_events() -> None:
    with ScriptedLLM([{"stall_after": 1, "stall_keepalive": 0.05}]) as llm:
        lines: list[str] = []
        timeout = httpx.Timeout(5, read=2)
        with httpx.stream(
            "POST", f"{llm.base_url}/chat/completions", json=STREAM, timeout=timeout
        ) as response:
            for line in response.iter_lines():
                lines.append(line)
                if lines.count(": keep-alive") >= 3:
                    break
    assert [line for line in lines if line.startswith("data: ")][1:] == []  # only the role chunk


def test_closing_the_server_ends_a_stall() -> None:
    llm = ScriptedLLM([{"stall_after": 0}]).start()
    with pytest.raises(httpx.HTTPError), httpx.Client(timeout=httpx.Timeout(5, read=2)) as sync:
        request = sync.build_request("POST", f"{llm.base_url}/chat/completions", json=STREAM)
        threading.Timer(0.2, llm.close).start()
        sync.send(request)
    assert llm.requests[0].outcome == "stalled (server closed)"


def test_no_choices_streams_only_the_usage_chunk() -> None:
    with ScriptedLLM([{"no_choices": True}]) as llm:
        lines = data_lines(llm)
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    assert [c["choices"] for c in chunks] == [[]] and chunks[0]["usage"]["prompt_tokens"] > 0


def test_no_choices_unstreamed_is_a_completion_with_an_empty_choice_list() -> None:
    with ScriptedLLM([{"no_choices": True}]) as llm:
        body = httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER}).json()
    assert body["object"] == "chat.completion" and body["choices"] == []


def test_an_empty_completion_has_no_text_and_no_calls() -> None:
    with ScriptedLLM([{"empty": True}, {"empty": True}]) as llm:
        chunks = [json.loads(line) for line in data_lines(llm)[:-1]]
        body = httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER}).json()
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert all(not d.get("content") and not d.get("tool_calls") for d in deltas)
    assert body["choices"][0]["message"]["content"] is None
    assert body["choices"][0]["finish_reason"] == "stop"


def test_no_events_is_a_200_stream_that_ends_at_once() -> None:
    with ScriptedLLM([{"no_events": True}, {"no_events": True}]) as llm:
        assert data_lines(llm) == []
        response = httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": USER})
    assert response.status_code == 200 and response.content == b""


@pytest.mark.parametrize(
    ("fault", "expected"),
    [("missing", [None, None]), ("empty", ["", ""]), ("duplicate", ["call_1_0", "call_1_0"])],
)
def test_tool_call_ids_can_be_broken_on_purpose(fault: str, expected: list[str | None]) -> None:
    reply = {"tool_calls": [{"name": "a"}, {"name": "b"}], "tool_call_ids": fault}
    with ScriptedLLM([reply]) as llm:
        chunks = [json.loads(line) for line in data_lines(llm)[:-1]]
    heads = [
        call
        for c in chunks
        if c["choices"]
        for call in c["choices"][0]["delta"].get("tool_calls") or []
        if "type" in call
    ]
    assert [head.get("id") for head in heads] == expected


def test_a_fault_only_reply_needs_no_text_in_a_script_file() -> None:
    script = script_from_json(
        [
            {"stall_after": 0},
            {"empty": True},
            {"no_choices": True},
            {"no_events": True},
            {"malformed_after": 1},
        ]
    )
    assert all(reply.is_fault for reply in script.replies)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"text": "x", "tool_call_ids": "weird"}, "tool_call_ids: expected one of missing, empty, duplicate"),
        ({"stall_after": -1}, "stall_after: expected a chunk count ≥ 0"),
        ({"malformed_after": "first"}, "malformed_after: expected an integer"),
        ({"empty": "yes"}, "empty: expected true or false"),
        ({"stall_after": 0, "stall_keepalive": 0}, "stall_keepalive: expected a number of seconds > 0"),
    ],
)
def test_bad_fault_keys_are_named(data: dict[str, Any], problem: str) -> None:
    with pytest.raises(ScriptError, match=problem):
        reply_from_json(data)
