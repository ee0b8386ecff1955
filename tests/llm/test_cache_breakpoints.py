"""Cache breakpoints for Claude behind OpenAI-compatible endpoints, and the cache reads and writes reported.

Recorded evidence: openrouter-claude-sonnet-4.6-cache-session.json (pydantic/pydantic-ai's OpenRouter cache
cassette) read 3,211 of 3,329 prompt tokens from the cache on its second call, with breakpoints sent."""

from __future__ import annotations

import asyncio
from typing import Any

from catbuddy.agent.events import UsageReported
from catbuddy.agent.loop import AgentLoop
from catbuddy.config import ModelOptions, Settings
from catbuddy.llm.cache_breakpoints import MAX_BREAKPOINTS, breakpoint_indexes
from catbuddy.llm.outgoing import outgoing_messages
from catbuddy.llm.reasoning_policy import policy_for
from catbuddy.testing.replay import RECORDINGS_DIR, Recording, ReplayServer
from catbuddy.testing.scripted_llm import Reply, ScriptedLLM
from catbuddy.workspace import Workspace

CLAUDE = "anthropic/claude-sonnet-4.6"


def conversation(tool_rounds: int, summary: bool = False) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are catbuddy."}]
    if summary:
        messages.append({"role": "user", "content": "[Previous conversation summary]: earlier work"})
    messages.append({"role": "user", "content": "fix the bug"})
    for n in range(tool_rounds):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n}"},
        ]
    return messages


def marked(messages: list[dict[str, Any]]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), list) and any("cache_control" in p for p in m["content"])
    ]


def test_claude_models_are_detected_by_name() -> None:
    assert policy_for("https://openrouter.ai/api/v1", CLAUDE).cache_breakpoints
    assert policy_for("https://gateway.example/v1", "claude-sonnet-4-5").cache_breakpoints
    assert not policy_for("https://openrouter.ai/api/v1", "openai/gpt-5").cache_breakpoints
    assert not policy_for(
        "https://api.anthropic.com", "claude-sonnet-4-5", native_anthropic=True
    ).cache_breakpoints
    assert not policy_for("https://x/v1", CLAUDE, cache_breakpoints=False).cache_breakpoints


def test_breakpoints_mark_the_system_prompt_the_previous_end_and_the_last_message() -> None:
    messages = conversation(3)
    # system; the tool result the previous request ended with; the newest tool result.
    assert breakpoint_indexes(messages) == [0, len(messages) - 3, len(messages) - 1]


def test_a_pinned_summary_keeps_its_own_breakpoint_and_there_are_never_more_than_four() -> None:
    for rounds in range(6):
        indexes = breakpoint_indexes(conversation(rounds, summary=True))
        assert 1 in indexes and len(indexes) <= MAX_BREAKPOINTS


def test_breakpoints_move_forward_as_the_history_grows() -> None:
    policy = policy_for("https://openrouter.ai/api/v1", CLAUDE)
    before = outgoing_messages(conversation(2), policy)
    after = outgoing_messages(conversation(3), policy)
    assert marked(after)[-2] == marked(before)[-1], "this request reads where the last one wrote"
    assert marked(after)[-1] > marked(before)[-1]


def test_the_stored_history_is_never_changed() -> None:
    messages = conversation(2)
    outgoing_messages(messages, policy_for("https://openrouter.ai/api/v1", CLAUDE))
    assert not marked(messages)


async def _tool_turn(llm: ScriptedLLM, workspace: Workspace, **options: Any) -> list[UsageReported]:
    (workspace.work_root / "a.py").write_text("x = 1\n" * 50)
    llm.push(*[Reply.tool_call("read_file", {"path": "a.py"}) for _ in range(3)], Reply.text("done"))
    settings = llm.settings(model=CLAUDE, approval="yolo", **options)
    loop = AgentLoop(workspace, settings, channel="headless", interactive=False)
    usage: list[UsageReported] = []
    loop.add_listener(lambda e: usage.append(e) if isinstance(e, UsageReported) else None)
    await loop.start()
    try:
        await loop.run_turn("read a.py a few times")
    finally:
        await loop.aclose()
    return usage


async def test_a_claude_tool_loop_writes_then_reads_the_cache(
    scripted_llm_factory, workspace: Workspace
) -> None:
    llm = scripted_llm_factory(cache_report="anthropic")
    usage = await _tool_turn(llm, workspace)
    assert usage[0].cache_write_tokens > 0
    assert all(u.cached_tokens > 0 for u in usage[1:]), [u.cached_tokens for u in usage]
    # (the server scales its counts to the prompt tokens it reports, so a read is within a few % of the write)
    assert usage[-1].cached_tokens >= 0.9 * usage[0].cache_write_tokens


async def test_without_breakpoints_claude_reads_nothing(scripted_llm_factory, workspace: Workspace) -> None:
    llm = scripted_llm_factory(cache_report="anthropic")
    usage = await _tool_turn(llm, workspace, model_options={CLAUDE: ModelOptions(cache_breakpoints=False)})
    assert sum(u.cached_tokens + u.cache_write_tokens for u in usage) == 0


def test_the_recorded_openrouter_session_gets_breakpoints_and_reports_reads_and_writes(
    workspace: Workspace,
) -> None:
    recording = Recording.load(RECORDINGS_DIR / "openrouter-claude-sonnet-4.6-cache-session.json")

    async def two_turns(server: ReplayServer) -> list[UsageReported]:
        settings = Settings(base_url=server.base_url, api_key="k", model=recording.model, approval="yolo")
        loop = AgentLoop(workspace, settings, channel="headless", interactive=False)
        usage: list[UsageReported] = []
        loop.add_listener(lambda e: usage.append(e) if isinstance(e, UsageReported) else None)
        await loop.start()
        try:
            await loop.run_turn("Analyze the architectural patterns used in distributed database systems")
            await loop.run_turn("Can you summarize that?")
        finally:
            await loop.aclose()
        return usage

    with ReplayServer(recording) as server:
        usage = asyncio.run(two_turns(server))
        for body in server.requests:
            assert 0 in marked(body["messages"]) and len(body["messages"]) - 1 in marked(body["messages"])
    assert usage[1].prompt_tokens == 3329 and usage[1].cached_tokens == 3211
    assert usage[0].cache_write_tokens > 0
