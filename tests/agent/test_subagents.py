"""Subagents (docs/architecture.md §5c): a `task` call runs a child with a fresh context against the same
scripted server; the parent's context grows by the child's answer alone."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from agent_helpers import session_events, session_messages

from catbuddy.agent.events import (
    ApprovalRequested,
    SubagentFinished,
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
)
from catbuddy.config import AgentSettings, ModelPrice
from catbuddy.messages import content_text
from catbuddy.session.records import read_session_file
from catbuddy.session.usage import usage_of
from catbuddy.testing.script import Reply, ReplySpec, ToolCallSpec

WHOLE = 1_000_000
CHILD_MARK = "## Agent: "  # the child's system prompt carries its agent's instructions under this heading


def is_child(body: dict[str, Any]) -> bool:
    return CHILD_MARK in content_text(body["messages"][0].get("content"))


def child_prompt(body: dict[str, Any]) -> str:
    first_user = next(m for m in body["messages"] if m["role"] == "user")
    return content_text(first_user["content"])


def task(prompt: str, *, agent: str = "explore", id: str | None = None) -> ToolCallSpec:
    return ToolCallSpec(
        "task", {"description": f"job {prompt[:10]}", "prompt": prompt, "agent": agent}, id=id
    )


class Script:
    """Answers the parent's requests from ``parent`` in order and each child's from ``child(body)``."""

    def __init__(self, parent: list[ReplySpec], child) -> None:
        self.parent = list(parent)
        self.child = child

    def __call__(self, body: dict[str, Any]) -> ReplySpec:
        if is_child(body):
            return self.child(body)
        return self.parent.pop(0) if self.parent else Reply.text("parent done", chunk_size=WHOLE)


def reads_then_answers(body: dict[str, Any]) -> ReplySpec:
    """A child that reads notes.txt on its first call and answers on its second."""
    if not any(m["role"] == "tool" for m in body["messages"]):
        return Reply.tool_call("read_file", {"path": "notes.txt"}, chunk_size=WHOLE)
    return Reply.text(f"ANSWER for: {child_prompt(body).split(chr(10))[0]}", chunk_size=WHOLE)


def child_requests(llm) -> list[Any]:
    return [r for r in llm.requests if is_child(r.body)]


def parent_requests(llm) -> list[Any]:
    return [r for r in llm.requests if not is_child(r.body)]


async def test_a_child_sees_none_of_the_parents_history_and_the_parent_gets_only_its_answer(
    workspace, scripted_llm_factory, make_loop
):
    (workspace.work_root / "notes.txt").write_text("SECRET-FILE-BODY 4711\n")
    script = Script(
        [
            Reply.text("Hello, noted.", chunk_size=WHOLE),
            ReplySpec(tool_calls=(task("Where is the config loaded?"),)),
        ],
        reads_then_answers,
    )
    llm = scripted_llm_factory([script] * 20)
    loop, events = await make_loop(llm)
    await asyncio.wait_for(loop.run_turn("remember PARENT-ONLY-WORDS please"), 20)

    await asyncio.wait_for(loop.run_turn("now delegate"), 30)

    children = child_requests(llm)
    assert len(children) == 2
    for request in children:
        sent = json.dumps(request.messages)
        assert "PARENT-ONLY-WORDS" not in sent and "Hello, noted." not in sent
        assert [m["role"] for m in request.messages][:2] == ["system", "user"]
        assert child_prompt(request.body).startswith("Where is the config loaded?")
    assert "SECRET-FILE-BODY" in json.dumps(children[1].messages)  # the child read the file …
    after = parent_requests(llm)[-1]
    results = [content_text(m["content"]) for m in after.messages if m["role"] == "tool"]
    assert results == ["ANSWER for: Where is the config loaded?"]  # … the parent got its answer only
    assert "SECRET-FILE-BODY" not in json.dumps(after.messages)
    started = events.of(SubagentStarted)[0]
    assert started.agent == "explore" and started.call_id == after.messages[-2]["tool_calls"][0]["id"]
    (progress,) = events.of(SubagentProgress)  # what the task call is doing, for the front end
    assert progress.call_id == started.call_id and progress.text == "read_file notes.txt"


async def test_two_task_calls_in_one_reply_run_at_the_same_time(workspace, scripted_llm_factory, make_loop):
    (workspace.work_root / "notes.txt").write_text("x\n")

    def slow_child(body):
        return Reply.text(f"done: {child_prompt(body)[:6]}", chunk_size=2, delay=0.1)  # ≥ 0.6 s a reply

    both = ReplySpec(tool_calls=(task("first job"), task("second job")))
    llm = scripted_llm_factory([Script([both], slow_child)] * 10)
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("two jobs"), 30)

    first, second = child_requests(llm)
    assert abs(second.received - first.received) < 0.3  # the second started while the first streamed
    results = [e.result for e in events.of(ToolCallFinished)]
    assert results == ["done: first", "done: second"]  # results stay in call order


async def test_at_most_max_parallel_children_run_at_once(workspace, scripted_llm_factory, make_loop):
    def slow_child(body):
        return Reply.text("ok", chunk_size=1, delay=0.2)

    three = ReplySpec(tool_calls=(task("one"), task("two"), task("three")))
    llm = scripted_llm_factory([Script([three], slow_child)] * 10)
    loop, _ = await make_loop(llm, agents=AgentSettings(max_parallel=2))

    await asyncio.wait_for(loop.run_turn("three jobs"), 30)

    times = sorted(r.received for r in child_requests(llm))
    assert times[1] - times[0] < 0.3 and times[2] - times[0] >= 0.35  # the third waited for a slot


async def test_an_unknown_agent_lists_the_known_ones(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([ReplySpec(tool_calls=(task("x", agent="wizard"),)), Reply.text("ok")])
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 20)

    result = events.of(ToolCallFinished)[0]
    assert result.is_error and "no agent named 'wizard'" in result.result and "explore:" in result.result


async def test_a_child_at_its_turn_limit_returns_what_it_has_marked_incomplete(
    workspace, scripted_llm_factory, make_loop
):
    (workspace.work_root / "notes.txt").write_text("x\n")

    def never_done(body):
        return Reply.tool_call("read_file", {"path": "notes.txt"}, text="still looking", chunk_size=WHOLE)

    llm = scripted_llm_factory([Script([ReplySpec(tool_calls=(task("look forever"),))], never_done)] * 20)
    loop, events = await make_loop(llm, agents=AgentSettings(max_turns=3))

    await asyncio.wait_for(loop.run_turn("go"), 30)

    assert len(child_requests(llm)) == 3
    result = events.of(ToolCallFinished)[-1]
    assert result.result.startswith("[incomplete: it reached its turn limit (3 model calls)")
    assert "still looking" in result.result
    assert events.of(SubagentFinished)[0].status == "incomplete"


async def test_a_child_cannot_start_another_at_the_default_depth(workspace, scripted_llm_factory, make_loop):
    def tries_to_delegate(body):
        if any(m["role"] == "tool" for m in body["messages"]):
            return Reply.text("gave up", chunk_size=WHOLE)
        return ReplySpec(tool_calls=(task("grandchild"),))

    llm = scripted_llm_factory(
        [Script([ReplySpec(tool_calls=(task("delegate again"),))], tries_to_delegate)] * 10
    )
    loop, _ = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 30)

    first = child_requests(llm)[0]
    assert "task" not in [t["function"]["name"] for t in first.body["tools"]]
    assert {"read_file", "grep", "list_dir"} <= {t["function"]["name"] for t in first.body["tools"]}
    assert not {"write_file", "edit_file", "exec"} & {t["function"]["name"] for t in first.body["tools"]}
    assert "there is no tool named 'task'" in content_text(child_requests(llm)[1].messages[-1]["content"])


async def test_the_childs_transcript_and_usage_are_kept_in_the_parents_session(
    workspace, scripted_llm_factory, make_loop
):
    (workspace.work_root / "notes.txt").write_text("abc\n")
    llm = scripted_llm_factory(
        [Script([ReplySpec(tool_calls=(task("read notes", id="call_T"),))], reads_then_answers)] * 10
    )
    loop, _ = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 30)

    (record,) = session_events(loop, "subagent")
    assert record.data["call_id"] == "call_T" and record.data["status"] == "done"
    roles = [m["role"] for m in record.data["transcript"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert record.data["answer"].startswith("ANSWER for: read notes")
    assert 0 < record.data["returned_tokens"] < record.data["spent_tokens"] and record.data["turns"] == 2
    parent_result = [m for m in session_messages(loop) if m["role"] == "tool"][0]["content"]
    assert record.data["returned_tokens"] == loop.turn_context().counter.count_text(parent_result)
    usage = usage_of(read_session_file(loop.session.path).records)
    assert usage.calls == 4  # two parent calls, two child calls
    assert usage.prompt_tokens == sum(r.prompt_tokens for r in llm.requests)
    assert loop.conversation.usage == usage


async def test_a_child_on_its_own_model_is_recorded_and_priced_at_that_model(
    workspace, scripted_llm_factory, make_loop
):
    from catbuddy.context.governance.report import prices_of

    agents = workspace.project_dir / "agents"
    agents.mkdir(parents=True)
    (agents / "cheap.md").write_text("---\ndescription: d\nmodel: cheap-model\n---\nDo it.\n")
    llm = scripted_llm_factory(
        [Script([ReplySpec(tool_calls=(task("x", agent="cheap"),))], lambda body: Reply.text("ok"))] * 5
    )
    loop, _ = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 30)

    (record,) = session_events(loop, "subagent")
    assert record.data["model"] == "cheap-model"
    assert {e.data["model"] for e in session_events(loop, "usage")} == {loop.turn_context().model}
    usage = usage_of(read_session_file(loop.session.path).records)
    [child] = child_requests(llm)
    assert dict(usage.models)["cheap-model"].prompt_tokens == child.prompt_tokens
    settings = loop.settings
    priced = replace(settings, prices={"cheap-model": ModelPrice(input=1.0, output=0.0)})
    assert usage.cost(None, prices_of(priced, usage)) == pytest.approx(child.prompt_tokens / 1e6)


async def test_a_childs_approval_reaches_the_user_named_after_the_child(
    workspace, scripted_llm_factory, make_loop
):
    agents = workspace.project_dir / "agents"
    agents.mkdir(parents=True)
    (agents / "scribe.md").write_text(
        "---\nname: scribe\ndescription: Writes notes.\ntools: [write_file, read_file]\nmax_turns: 4\n---\n"
        "Write what you are asked to write.\n"
    )

    def writes(body):
        if any(m["role"] == "tool" for m in body["messages"]):
            return Reply.text("written", chunk_size=WHOLE)
        return Reply.tool_call("write_file", {"path": "out.txt", "content": "hi\n"}, chunk_size=WHOLE)

    llm = scripted_llm_factory(
        [Script([ReplySpec(tool_calls=(task("write out.txt", agent="scribe"),))], writes)] * 10
    )
    loop, events = await make_loop(llm, approval="ask")
    events.on = lambda e: isinstance(e, ApprovalRequested) and loop.answer_approval(e.call_id, "allow_once")

    await asyncio.wait_for(loop.run_turn("go"), 30)

    asked = events.of(ApprovalRequested)[0]
    assert asked.name == "write_file" and asked.summary.startswith("[subagent scribe]")
    assert "/" in asked.call_id  # <parent call>/<child call>: never confused with the parent's own calls
    ended = [e for e in events.of(ToolCallFinished) if e.call_id == asked.call_id]
    assert len(ended) == 1 and ended[0].name == "write_file"  # the asked call's end is shown too
    assert (workspace.work_root / "out.txt").read_text() == "hi\n"
    assert events.of(ToolCallFinished)[-1].result == "written"


async def test_stopping_the_parent_stops_its_children(workspace, scripted_llm_factory, make_loop):
    def stalls(body):
        return Reply.text("x" * 200, chunk_size=1, delay=0.05)

    llm = scripted_llm_factory([Script([ReplySpec(tool_calls=(task("slow"),))], stalls)] * 10)
    loop, events = await make_loop(llm)

    loop.submit("go")
    await events.wait_for(SubagentStarted)
    await asyncio.sleep(0.3)
    await asyncio.wait_for(loop.stop(), 5)

    finished = events.of(SubagentFinished)[0]
    assert finished.status == "incomplete" and finished.reason == "stopped by the user"


async def test_with_max_depth_2_a_child_may_start_one_grandchild_but_no_deeper(
    workspace, scripted_llm_factory, make_loop
):
    def nested(body):
        system = content_text(body["messages"][0]["content"])
        done = any(m["role"] == "tool" for m in body["messages"])
        if "task" in {t["function"]["name"] for t in body.get("tools") or []} and not done:
            return ReplySpec(tool_calls=(task("go one level deeper"),))
        return Reply.text("answer from below" if not done else "relayed: " + body["messages"][-1]["content"][:40],
                          chunk_size=WHOLE) if "## Agent:" in system else Reply.text("top")  # fmt: skip

    llm = scripted_llm_factory([Script([ReplySpec(tool_calls=(task("start"),))], nested)] * 10)
    loop, events = await make_loop(llm, agents=AgentSettings(max_depth=2))

    await asyncio.wait_for(loop.run_turn("go"), 30)

    started = events.of(SubagentStarted)  # only the parent's children are reported on its bus
    assert len(started) == 1
    tools_per_child_request = [{t["function"]["name"] for t in r.body["tools"]} for r in child_requests(llm)]
    assert "task" in tools_per_child_request[0]  # the child may delegate …
    assert "task" not in tools_per_child_request[1]  # … its child may not
    assert events.of(ToolCallFinished)[-1].result.startswith("relayed: answer from below")


async def test_a_child_whose_provider_fails_returns_incomplete_with_the_reason(
    scripted_llm_factory, make_loop
):
    from catbuddy.testing.script import Reply as R

    def fails(body):
        return R.error(400, message="model not found: tiny-model")

    llm = scripted_llm_factory([Script([ReplySpec(tool_calls=(task("x"),))], fails)] * 5)
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 30)

    result = events.of(ToolCallFinished)[0]
    assert result.result.startswith("[incomplete: it failed: ") and "model not found" in result.result
    assert not result.is_error  # the call worked; the child's failure is its answer, marked


async def test_an_agent_listing_tools_catbuddy_lacks_runs_without_them_and_says_so(
    workspace, scripted_llm_factory, make_loop
):
    from catbuddy.agent.events import Notice

    agents = workspace.project_dir / "agents"
    agents.mkdir(parents=True)
    (agents / "claude-style.md").write_text("---\ndescription: d\ntools: Read, grep\n---\nDo it.\n")
    llm = scripted_llm_factory([Script([ReplySpec(tool_calls=(task("x", agent="claude-style"),))],
                                       lambda body: Reply.text("ok"))] * 5)  # fmt: skip
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 30)

    assert [t["function"]["name"] for t in child_requests(llm)[0].body["tools"]] == ["grep"]
    assert any("lists tools catbuddy does not have: Read" in n.text for n in events.of(Notice))


async def test_the_model_is_told_of_the_users_own_agents_and_only_when_there_are_some(
    workspace, scripted_llm_factory, make_loop
):
    from catbuddy.cli_commands.context_view import build_view

    llm = scripted_llm_factory([Reply.text("a"), Reply.text("b")])
    loop, _ = await make_loop(llm)
    await asyncio.wait_for(loop.run_turn("one"), 20)
    agents = workspace.project_dir / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\ndescription: Reviews a diff.\n---\nReview it.\n")
    await asyncio.wait_for(loop.run_turn("two"), 20)

    before, after = (content_text(r.messages[0]["content"]) for r in llm.requests)
    assert "## Subagents" not in before  # the default prompt is unchanged
    assert after.endswith(
        "## Subagents\n\nBesides `explore`, the `task` tool can start these agents:\n- reviewer: Reviews a diff."
    )
    view = build_view(workspace, loop.settings, connect_mcp=False)
    assert view.system_prompt == after  # `catbuddy context` shows what is sent


async def test_a_child_governs_its_own_history(workspace, scripted_llm_factory, make_loop):
    # One long turn cannot be compacted (compaction folds at a user message); governance still keeps the
    # child's requests small: its old read results are stubbed, in its own requests only.
    from catbuddy.config import ContextSettings

    (workspace.work_root / "notes.txt").write_text("NOTE LINE\n" * 40)

    def reads_six_times(body):
        reads = sum(1 for m in body["messages"] if m["role"] == "tool")
        if reads < 6:
            return Reply.tool_call("read_file", {"path": "notes.txt"}, chunk_size=WHOLE)
        return Reply.text("finished reading", chunk_size=WHOLE)

    llm = scripted_llm_factory(
        [Script([ReplySpec(tool_calls=(task("read it six times"),))], reads_six_times)] * 20
    )
    context = ContextSettings(keep_recent_results=2, microcompact_min_tokens=0)
    loop, events = await make_loop(llm, context=context)

    await asyncio.wait_for(loop.run_turn("go"), 60)

    last_child = child_requests(llm)[-1]
    results = [content_text(m["content"]) for m in last_child.messages if m["role"] == "tool"]
    assert len(results) == 6
    assert all(r.startswith("[read_file result:") for r in results[:4])  # stubbed by the child's governance
    assert all("NOTE LINE" in r and not r.startswith("[") for r in results[4:])
    assert events.of(ToolCallFinished)[-1].result == "finished reading"
