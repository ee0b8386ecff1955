"""Reasoning in replies: parsed from every shape, kept apart from the answer, sent back as the family wants.

Shapes follow the recorded traffic in tests/data/provider_recordings (sources cited per test)."""

from __future__ import annotations

from typing import Any

import pytest
from provider_helpers import USER, collect

from catbuddy.config import ModelOptions, Settings
from catbuddy.llm.errors import EmptyResponse, MalformedResponse
from catbuddy.llm.outgoing import outgoing_messages
from catbuddy.llm.provider import ReasoningChunk, TextChunk
from catbuddy.llm.reasoning import DetailsMerger, ThinkSplitter
from catbuddy.llm.reasoning_policy import policy_for
from catbuddy.llm.types import StreamAssembler
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM


def split_all(pieces: list[str]) -> tuple[str, str]:
    splitter = ThinkSplitter()
    text, reasoning = "", ""
    for piece in pieces:
        t, r = splitter.feed(piece)
        text, reasoning = text + t, reasoning + r
    t, r = splitter.flush()
    return text + t, reasoning + r


def test_a_leading_think_block_split_across_chunks_is_reasoning() -> None:
    # hf-router-deepseek-r1-think-tags.json streams "<think>" and "\n" as chunks of their own.
    assert split_all(["<th", "ink>\nOkay, the user", " asks.</thi", "nk>\n\nHere is", " the answer."]) == (
        "Here is the answer.",
        "\nOkay, the user asks.",
    )


def test_a_think_tag_later_in_the_answer_stays_text() -> None:
    assert split_all(["Use ", "<think> tags", " like this"]) == ("Use <think> tags like this", "")


def test_an_unclosed_think_block_is_all_reasoning() -> None:
    assert split_all(["<think>still going"]) == ("", "still going")


def test_reasoning_details_fragments_merge_by_index_and_keep_the_signature() -> None:
    # openrouter-claude-haiku-4.5-reasoning-tool.json: text in fragments, the signature on the last one.
    merger = DetailsMerger()
    merger.feed([{"type": "reasoning.text", "text": "The user", "format": "anthropic-claude-v1", "index": 0}])
    merger.feed([{"type": "reasoning.text", "text": " asks.", "format": "anthropic-claude-v1", "index": 0}])
    merger.feed(
        [{"type": "reasoning.text", "signature": "EqQBCkgI", "format": "anthropic-claude-v1", "index": 0}]
    )
    merger.feed(
        [{"type": "reasoning.encrypted", "data": "CiQBjz1r", "format": "google-gemini-v1", "index": 1}]
    )
    assert merger.items == [
        {"type": "reasoning.text", "text": "The user asks.", "format": "anthropic-claude-v1", "index": 0,
         "signature": "EqQBCkgI"},
        {"type": "reasoning.encrypted", "data": "CiQBjz1r", "format": "google-gemini-v1", "index": 1},
    ]  # fmt: skip


def _chunk(delta: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


def test_magistral_thinking_parts_are_reasoning_and_unknown_parts_are_skipped() -> None:
    # mistral-magistral-content-list.json
    assembler = StreamAssembler()
    events = assembler.feed(
        _chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "2+2"}]}]})
    )
    events += assembler.feed(
        _chunk({"content": [{"type": "image_url", "image_url": "x"}, {"type": "text", "text": "4"}]})
    )
    assert events == [ReasoningChunk("2+2"), TextChunk("4")]
    assert assembler.response().message == {"role": "assistant", "content": "4", "reasoning": "2+2"}


def test_gemini_thought_signatures_on_tool_calls_are_kept() -> None:
    # Google's OpenAI-compatible endpoint (ai.google.dev/gemini-api/docs/openai, "thought signatures"):
    # tool_calls[].extra_content.google.thought_signature.
    assembler = StreamAssembler()
    signature = {"google": {"thought_signature": "EjQKMgEMOdbH"}}
    assembler.feed(_chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "extra_content": signature,
                                           "function": {"name": "weather", "arguments": "{}"}}]}))  # fmt: skip
    call = assembler.response().tool_calls[0]
    assert call["extra_content"] == signature
    google = policy_for("https://generativelanguage.googleapis.com/v1beta/openai", "gemini-3-pro-preview")
    sent = outgoing_messages([*USER, assembler.response().message], google)
    assert sent[-1]["tool_calls"][0]["extra_content"] == signature
    openai = policy_for("https://api.openai.com/v1", "gpt-5")
    assert (
        "extra_content"
        not in outgoing_messages([*USER, assembler.response().message], openai)[-1]["tool_calls"][0]
    )


async def test_reasoning_streams_apart_and_is_part_of_the_message(
    scripted_llm: ScriptedLLM, make_provider
) -> None:
    scripted_llm.push(Reply.text("Paris.", reasoning="The capital of France is Paris."))
    provider = make_provider(scripted_llm)
    events, response = await collect(provider.stream_chat(model="scripted", messages=USER))
    assert (
        "".join(e.text for e in events if isinstance(e, ReasoningChunk)) == "The capital of France is Paris."
    )
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Paris."
    assert response.message["content"] == "Paris."
    assert response.message["reasoning_content"] == "The capital of France is Paris."


async def test_only_reasoning_and_no_answer_is_an_error_the_user_sees(
    scripted_llm: ScriptedLLM, make_provider
) -> None:
    # openrouter-minimax-m2-stream-error.json: reasoning, then finish_reason "length".
    scripted_llm.push(Reply.text("", reasoning="Let me think about this for a long", finish_reason="length"))
    provider = make_provider(scripted_llm)
    with pytest.raises(EmptyResponse, match="only reasoning"):
        await collect(provider.stream_chat(model="scripted", messages=USER))


async def test_an_unsupported_content_shape_is_not_retried(scripted_llm: ScriptedLLM, make_provider) -> None:
    data = '{"choices": [{"index": 0, "delta": {"content": {"kind": "audio"}}}]}'
    scripted_llm.push(Reply.malformed(0, data), Reply.text("never asked for"))
    provider = make_provider(scripted_llm, max_retries=4)
    with pytest.raises(MalformedResponse, match="does not support"):
        await collect(provider.stream_chat(model="scripted", messages=USER))
    assert len(scripted_llm.requests) == 1


def _turn(reasoning: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "reasoning_content": reasoning,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "40 C"},
    ]  # fmt: skip


def test_deepseek_gets_reasoning_back_within_the_turn_only() -> None:
    policy = policy_for("https://api.deepseek.com", "deepseek-reasoner")
    earlier = [*_turn("old thought"), {"role": "assistant", "content": "40 C."}]
    sent = outgoing_messages([*earlier, *_turn("new thought")], policy)
    assistants = [m for m in sent if m["role"] == "assistant"]
    assert "reasoning_content" not in assistants[0]
    assert assistants[-1]["reasoning_content"] == "new thought"


def test_openai_never_gets_reasoning_fields() -> None:
    sent = outgoing_messages(_turn("thought"), policy_for("https://api.openai.com/v1", "o4-mini"))
    assert not any(k.startswith("reasoning") for m in sent for k in m)


def test_a_model_option_overrides_the_detected_policy() -> None:
    settings = Settings(model_options={"deepseek": ModelOptions(send_reasoning="none")})
    options = settings.options_for("deepseek-reasoner")
    policy = policy_for(
        "https://api.deepseek.com", "deepseek-reasoner", send_reasoning=options.send_reasoning
    )
    assert policy.send_reasoning == "none"


async def test_reasoning_effort_is_sent_in_the_providers_field(
    scripted_llm: ScriptedLLM, make_provider
) -> None:
    scripted_llm.push(Reply.text("ok"))
    provider = make_provider(scripted_llm, model_options={"scripted": ModelOptions(reasoning_effort="high")})
    await collect(provider.stream_chat(model="scripted", messages=USER))
    assert scripted_llm.requests[0]["reasoning_effort"] == "high"
    gateway = policy_for("https://openrouter.ai/api/v1", "openai/o3", effort="low")
    assert (gateway.effort_style, gateway.effort) == ("reasoning", "low")


async def test_a_refused_reasoning_effort_is_dropped_once_and_the_retry_says_how_to_stop_it(
    scripted_llm: ScriptedLLM, make_provider
) -> None:
    # openai-o1-mini-400-system-role.json is how OpenAI words a refused value.
    scripted_llm.push(
        Reply.error(400, "Unsupported parameter: 'reasoning_effort' is not supported with this model.")
    )
    scripted_llm.push(Reply.text("ok"))
    provider = make_provider(scripted_llm, model_options={"scripted": ModelOptions(reasoning_effort="low")})
    reasons: list[str] = []
    _, response = await collect(
        provider.stream_chat(model="scripted", messages=USER, on_retry=lambda a, d, r: reasons.append(r))
    )
    assert response.text == "ok"
    assert "reasoning_effort" not in scripted_llm.requests[1].body
    assert 'reasoning_effort = "" under [model_options."scripted"]' in reasons[0]


def test_an_unstreamed_completion_splits_reasoning_the_same_way() -> None:
    from catbuddy.llm.types import response_from_completion

    completion = {"choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "<think>plan</think>\n\n## Goal\nsummary"}}]}  # fmt: skip
    message = response_from_completion(completion).message
    assert (message["content"], message["reasoning"]) == ("## Goal\nsummary", "plan")
