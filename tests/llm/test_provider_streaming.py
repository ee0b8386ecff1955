"""Streaming, tool-call assembly, usage and non-streamed calls, through the real SDK."""

from __future__ import annotations

import json
from collections.abc import Callable

from provider_helpers import USER, collect

from catbuddy.context.counting.tokens import counter_for_model
from catbuddy.llm.provider import Provider, TextChunk, ToolCallProgress
from catbuddy.testing.script import Reply, ReplySpec
from catbuddy.testing.scripted_llm import ScriptedLLM

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


async def test_text_streams_as_chunks_then_one_complete_message(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("Hello, streaming world!", chunk_size=4))
    events, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    assert [e.text for e in events if isinstance(e, TextChunk)] == [
        "Hell",
        "o, s",
        "trea",
        "ming",
        " wor",
        "ld!",
    ]
    assert response.message == {"role": "assistant", "content": "Hello, streaming world!"}
    assert response.finish_reason == "stop"


async def test_usage_from_the_final_chunk_is_captured(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("four little words here"))
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    counter = counter_for_model("scripted")
    assert response.usage is not None
    assert response.usage.prompt_tokens == counter.count_request(USER)
    assert response.usage.completion_tokens == counter.count_text("four little words here")
    assert scripted_llm.requests[0]["stream_options"] == {"include_usage": True}


async def test_two_parallel_calls_with_fragmented_arguments_are_assembled(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    args_a = {"path": "src/catbuddy/agent/loop.py"}
    args_b = {"path": "README.md", "depth": 2}
    scripted_llm.push(Reply.tool_calls(("read_file", args_a), ("list_dir", args_b), chunk_size=3))
    events, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    calls = response.tool_calls
    assert [c["function"]["name"] for c in calls] == ["read_file", "list_dir"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [args_a, args_b]
    assert all(c["type"] == "function" and c["id"] for c in calls)
    assert calls[0]["id"] != calls[1]["id"]
    assert response.message["content"] is None
    assert response.finish_reason == "tool_calls"
    progress = [e for e in events if isinstance(e, ToolCallProgress)]
    assert progress[-1].name == "list_dir" and progress[-1].chars == len(json.dumps(args_b))


async def test_interleaved_argument_fragments_are_assembled_by_index(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    calls = Reply.tool_calls(("a", {"x": "1234567890"}), ("b", {"y": "abcdefghij"})).tool_calls
    scripted_llm.push(ReplySpec(tool_calls=calls, chunk_size=2, interleave_tool_calls=True))
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    assert [json.loads(c["function"]["arguments"]) for c in response.tool_calls] == [
        {"x": "1234567890"},
        {"y": "abcdefghij"},
    ]


async def test_text_and_a_tool_call_in_one_reply(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.py"}, id="call_7", text="Let me look."))
    _, response = await collect(
        make_provider(scripted_llm).stream_chat(model="scripted", messages=USER, tools=TOOLS)
    )
    assert response.message == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
        ],
    }
    assert scripted_llm.requests[0].tools == TOOLS


async def test_a_call_without_arguments_gets_an_empty_json_object(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.tool_call("list_dir", ""))
    _, response = await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER))
    assert response.tool_calls[0]["function"]["arguments"] == "{}"


async def test_max_tokens_is_sent_under_the_name_compatible_servers_know(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("ok"))
    await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=USER, max_tokens=321))
    assert scripted_llm.requests[0]["max_tokens"] == 321
    assert "tools" not in scripted_llm.requests[0].body


async def test_complete_is_a_non_streamed_call_without_tools(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    scripted_llm.push(Reply.text("A summary."))
    response = await make_provider(scripted_llm).complete(model="scripted", messages=USER, max_tokens=100)
    assert response.text == "A summary."
    assert response.message == {"role": "assistant", "content": "A summary."}
    assert response.usage is not None and response.usage.prompt_tokens == counter_for_model(
        "x"
    ).count_request(USER)
    sent = scripted_llm.requests[0]
    assert not sent.get("stream") and "tools" not in sent.body and sent["max_tokens"] == 100


async def test_messages_reach_the_server_exactly_as_given(
    scripted_llm: ScriptedLLM, make_provider: Callable[..., Provider]
) -> None:
    history = [
        {"role": "system", "content": "You are catbuddy."},
        {"role": "user", "content": "read a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "print('hi')"},
    ]
    scripted_llm.push(Reply.text("done"))
    await collect(make_provider(scripted_llm).stream_chat(model="scripted", messages=history))
    assert scripted_llm.requests[0]["messages"] == history
