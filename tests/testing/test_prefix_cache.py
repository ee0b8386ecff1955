"""The scripted server's simulated prompt cache: it serves what a provider's prefix cache would, and says so
in the usage it reports, read back through the real openai SDK."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from catbuddy.context.counting.tokens import counter_for_model
from catbuddy.llm.types import Usage
from catbuddy.testing.prefix_cache import PrefixCache
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM

LONG = "Every module in this project keeps its public names at the top. " * 300  # ~3,600 tokens
SYSTEM = {"role": "system", "content": LONG}


def ask(llm: ScriptedLLM, messages: list[dict[str, Any]], model: str = "scripted", **kw: Any) -> Any:
    client = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model=model, messages=messages, stream=True, stream_options={"include_usage": True}, **kw
    )
    usage = None
    for chunk in stream:
        usage = chunk.usage or usage
    return usage


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_the_first_request_is_not_cached_and_its_repeat_is() -> None:
    with ScriptedLLM(["a", "b"]) as llm:
        first = ask(llm, [SYSTEM, user("hi")])
        second = ask(llm, [SYSTEM, user("hi")])
    assert first.prompt_tokens_details.cached_tokens == 0
    cached = second.prompt_tokens_details.cached_tokens
    assert 0 < cached <= second.prompt_tokens
    assert cached % 128 == 0  # served in blocks, as OpenAI does
    assert second.prompt_tokens - cached < 128 + 20  # all of it but the last partial block


def test_an_appended_conversation_is_served_up_to_the_old_prompt() -> None:
    with ScriptedLLM(["a", "b"]) as llm:
        first = ask(llm, [SYSTEM, user("hi")])
        second = ask(llm, [SYSTEM, user("hi"), {"role": "assistant", "content": "a"}, user(LONG)])
    cached = second.prompt_tokens_details.cached_tokens
    assert first.prompt_tokens - 128 <= cached <= first.prompt_tokens


def test_a_change_early_in_the_prompt_ends_the_cached_prefix_there() -> None:
    edited = {"role": "system", "content": "Changed. " + LONG}
    with ScriptedLLM(["a", "b"]) as llm:
        ask(llm, [SYSTEM, user("hi")])
        after_edit = ask(llm, [edited, user("hi")])
    assert after_edit.prompt_tokens_details.cached_tokens == 0


def test_a_change_late_in_a_message_keeps_the_part_before_it() -> None:
    late = {"role": "system", "content": LONG[: len(LONG) // 2] + "EDIT" + LONG[len(LONG) // 2 :]}
    with ScriptedLLM(["a", "b"]) as llm:
        first = ask(llm, [SYSTEM, user("hi")])
        second = ask(llm, [late, user("hi")])
    cached = second.prompt_tokens_details.cached_tokens
    assert first.prompt_tokens * 0.3 < cached < first.prompt_tokens * 0.7


def test_other_tool_schemas_break_the_prefix_because_they_come_first() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    with ScriptedLLM(["a", "b"]) as llm:
        ask(llm, [SYSTEM, user("hi")])
        with_tools = ask(llm, [SYSTEM, user("hi")], tools=[tool])
    assert with_tools.prompt_tokens_details.cached_tokens == 0


def test_the_cache_is_per_model() -> None:
    with ScriptedLLM(["a", "b"]) as llm:
        ask(llm, [SYSTEM, user("hi")], model="one")
        other = ask(llm, [SYSTEM, user("hi")], model="two")
    assert other.prompt_tokens_details.cached_tokens == 0


def test_prompts_under_1024_tokens_are_never_cached() -> None:
    short = [{"role": "system", "content": "be brief " * 50}, user("hi")]
    with ScriptedLLM(["a", "b"]) as llm:
        ask(llm, short)
        again = ask(llm, short)
    assert again.prompt_tokens < 1024
    assert again.prompt_tokens_details.cached_tokens == 0


def test_a_prefix_idle_past_its_lifetime_is_gone() -> None:
    now = [1000.0]
    cache = PrefixCache(ttl_seconds=300, clock=lambda: now[0])
    with ScriptedLLM(["a", "b", "c"], prefix_cache=cache) as llm:
        ask(llm, [SYSTEM, user("hi")])
        now[0] += 200
        warm = ask(llm, [SYSTEM, user("hi")])
        now[0] += 301
        cold = ask(llm, [SYSTEM, user("hi")])
    assert warm.prompt_tokens_details.cached_tokens > 0
    assert cold.prompt_tokens_details.cached_tokens == 0


def test_the_cache_can_be_turned_off() -> None:
    with ScriptedLLM(["a", "b"], prefix_cache=False) as llm:
        ask(llm, [SYSTEM, user("hi")])
        again = ask(llm, [SYSTEM, user("hi")])
    assert again.prompt_tokens_details.cached_tokens == 0


def test_deepseek_style_usage_reports_hit_and_miss_tokens_and_catbuddy_reads_them() -> None:
    with ScriptedLLM(["a", "b"], cache_report="deepseek") as llm:
        ask(llm, [SYSTEM, user("hi")])
        again = ask(llm, [SYSTEM, user("hi")])
    extra = again.model_extra or {}
    assert extra["prompt_cache_hit_tokens"] > 0
    assert extra["prompt_cache_hit_tokens"] + extra["prompt_cache_miss_tokens"] == again.prompt_tokens
    assert Usage.from_sdk(again).cached_tokens == extra["prompt_cache_hit_tokens"]


def test_recorded_requests_carry_what_the_cache_served() -> None:
    with ScriptedLLM([Reply.text("a"), Reply.text("b")]) as llm:
        ask(llm, [SYSTEM, user("hi")])
        usage = ask(llm, [SYSTEM, user("hi")])
    assert [r.cached_tokens for r in llm.requests] == [0, usage.prompt_tokens_details.cached_tokens]


def test_an_unknown_cache_report_style_is_refused() -> None:
    with pytest.raises(ValueError, match="cache_report"):
        ScriptedLLM(cache_report="bedrock")


def test_cached_tokens_never_exceed_prompt_tokens_for_many_shapes() -> None:
    counter = counter_for_model("scripted")
    cache = PrefixCache(min_tokens=0, block_tokens=1)
    history: list[dict[str, Any]] = [SYSTEM]
    for turn in range(30):
        history = [*history, user(f"turn {turn} " + "x" * (turn * 37))]
        if turn % 7 == 3:  # an edit in the middle, as a microcompaction batch makes
            history[len(history) // 2] = user("stub")
        body = {"model": "m", "messages": history}
        prompt = counter.count_request(history)
        assert 0 <= cache.served(body, prompt, counter.count_text) <= prompt
