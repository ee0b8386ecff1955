"""Bounds on one reply: too many calls, oversized arguments and oversized results never freeze or bloat."""

from __future__ import annotations

import json

from agent_helpers import assert_valid_request, session_messages

from catbuddy.agent.events import Notice, ToolCallFinished, TurnEndReason
from catbuddy.config import ToolSettings
from catbuddy.testing.script import Reply, ToolCallSpec


async def test_calls_past_the_limit_are_answered_not_run(workspace, scripted_llm, make_loop):
    calls = [ToolCallSpec("list_dir", {"path": "."}, id=f"call_{i}") for i in range(150)]
    scripted_llm.push(Reply.tool_calls(*calls), Reply.text("done"))
    loop, events = await make_loop(scripted_llm, tools=ToolSettings(max_calls_per_reply=64))

    outcome = await loop.run_turn("look around a lot")

    assert outcome.reason is TurnEndReason.DONE
    finished = events.of(ToolCallFinished)
    assert len(finished) == 64 and not any(f.is_error for f in finished)
    follow_up = scripted_llm.requests[1].messages
    assert_valid_request(follow_up)
    results = [m["content"] for m in follow_up if m["role"] == "tool"]
    assert len(results) == 150
    assert all("too many calls in one reply" in r for r in results[64:])
    assert any("150 tool calls" in n.text for n in events.of(Notice))


async def test_an_oversized_argument_is_stored_cut_and_the_call_refused(workspace, scripted_llm, make_loop):
    content = "x" * 300_000
    # 4 KB deltas: the bound is on the argument's size, and 37,000 eight-character deltas only cost time.
    big_call = Reply.tool_call("write_file", {"path": "big.txt", "content": content}, chunk_size=4096)
    scripted_llm.push(big_call, Reply.text("ok"))
    loop, events = await make_loop(scripted_llm)

    await loop.run_turn("write a big file")

    assert not (workspace.work_root / "big.txt").exists()
    [result] = events.of(ToolCallFinished)
    assert result.is_error and "max_argument_bytes" in result.result
    stored = session_messages(loop)[1]["tool_calls"][0]["function"]["arguments"]
    assert len(stored) < 10_000 and json.loads(stored)["catbuddy_cut"].startswith("300,0")
    assert loop.session.path.stat().st_size < 50_000  # never re-sent in full
    assert_valid_request(scripted_llm.requests[1].messages)


async def test_an_oversized_result_is_cut_in_the_middle_before_it_is_stored(workspace, scripted_llm, make_loop):
    (workspace.work_root / "long.txt").write_text("".join(f"line {i}\n" for i in range(20_000)))
    scripted_llm.push(Reply.tool_call("read_file", {"path": "long.txt"}), Reply.text("read"))
    loop, events = await make_loop(scripted_llm, tools=ToolSettings(max_result_chars=5_000))

    await loop.run_turn("read it all")

    [result] = events.of(ToolCallFinished)
    assert len(result.result) <= 5_000 and "max_result_chars" in result.result
    assert result.result.startswith("     1\tline 0")
    assert session_messages(loop)[2]["content"] == result.result


async def test_the_records_of_one_model_call_are_made_durable_with_one_fsync(
    workspace, scripted_llm, make_loop, monkeypatch
):
    import os

    (workspace.work_root / "a.txt").write_text("alpha\n")
    scripted_llm.push(
        Reply.tool_calls(("read_file", {"path": "a.txt"}), ("list_dir", {"path": "."})), Reply.text("done")
    )
    loop, _ = await make_loop(scripted_llm)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))

    await loop.run_turn("read and list")

    # one per model call: the user's message, reply, usage and both tool results in the first
    assert len(synced) == len(scripted_llm.requests) == 2
    assert [m["role"] for m in session_messages(loop)] == ["user", "assistant", "tool", "tool", "assistant"]
