"""A session on the native Anthropic provider, against the scripted server's Messages mode (real SDK, HTTP):
tools, thinking passed back, the breakpoint cache read, compaction and errors work as on any provider."""

from __future__ import annotations

from typing import Any

from agent_helpers import session_messages

from catbuddy.agent.events import ErrorOccurred, ReasoningDelta, UsageReported
from catbuddy.config import ContextSettings, ModelOptions
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM

CLAUDE = "claude-sonnet-4-5"


def native(llm: ScriptedLLM, **extra: Any) -> dict[str, Any]:
    return {"provider": "anthropic", "model": CLAUDE, **extra}


async def test_a_tool_loop_with_thinking_on_the_native_provider(
    scripted_llm: ScriptedLLM, make_loop, workspace
) -> None:
    (workspace.work_root / "a.txt").write_text("alpha\n")
    scripted_llm.push(
        Reply.tool_call("read_file", {"path": "a.txt"}, reasoning="Read the file first."),
        Reply.text("It says alpha.", reasoning="Answer now."),
    )
    loop, recorder = await make_loop(scripted_llm, **native(scripted_llm))
    await loop.run_turn("what is in a.txt?")
    assert all(r.path == "/v1/messages" for r in scripted_llm.requests)
    second = scripted_llm.requests[1].body
    reply = next(m for m in second["messages"] if m["role"] == "assistant")
    assert reply["content"][0] == {
        "type": "thinking",
        "thinking": "Read the file first.",
        "signature": reply["content"][0]["signature"],
    }
    assert reply["content"][0]["signature"].startswith("sig-")
    assert reply["content"][1]["type"] == "tool_use"
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"
    assert "".join(e.text for e in recorder.of(ReasoningDelta)) == "Read the file first.Answer now."
    assert session_messages(loop)[-1]["content"] == "It says alpha."


async def test_the_second_request_reads_what_the_first_wrote(
    scripted_llm: ScriptedLLM, make_loop, workspace
) -> None:
    (workspace.work_root / "a.txt").write_text("alpha\n" * 200)
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.txt"}), Reply.text("done"))
    loop, recorder = await make_loop(scripted_llm, **native(scripted_llm))
    await loop.run_turn("read a.txt")
    first, second = recorder.of(UsageReported)
    assert first.cache_write_tokens > 0 and first.cached_tokens == 0
    assert second.cached_tokens >= first.cache_write_tokens * 0.9
    body = scripted_llm.requests[0].body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_compaction_runs_on_the_native_provider(scripted_llm: ScriptedLLM, make_loop) -> None:
    scripted_llm.short_summaries = True
    scripted_llm.push(*[Reply.text(f"answer {n} " + "detail " * 200) for n in range(6)])
    context = ContextSettings(compact_keep_recent=2)
    loop, _ = await make_loop(scripted_llm, **native(scripted_llm, context=context))
    for n in range(6):
        await loop.run_turn(f"question {n}")
    result = await loop.compact()
    assert result.ok, result.message
    assert scripted_llm.requests[-1].path == "/v1/messages"


async def test_a_rate_limit_error_reaches_the_user(scripted_llm: ScriptedLLM, make_loop) -> None:
    scripted_llm.push(Reply.error(429, "Number of request tokens has exceeded your per-minute rate limit"))
    loop, recorder = await make_loop(scripted_llm, **native(scripted_llm))
    await loop.run_turn("hi")
    assert "Rate limited" in recorder.of(ErrorOccurred)[0].message


async def test_effort_asks_for_thinking(scripted_llm: ScriptedLLM, make_loop) -> None:
    scripted_llm.push(Reply.text("ok"))
    options = {CLAUDE: ModelOptions(reasoning_effort="low")}
    loop, _ = await make_loop(scripted_llm, **native(scripted_llm, model_options=options))
    await loop.run_turn("hi")
    assert scripted_llm.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
