"""The task plan (docs/architecture.md §5c): `update_plan` replaces the whole list each call, front ends get
a `plan` event, invalid plans come back as errors naming the problem, and the current plan is sent
verbatim in every request after any number of compactions."""

from __future__ import annotations

import asyncio
import json

from compaction_helpers import WHOLE, Brain, is_summary_request, summary_requests

from catbuddy.agent.events import PlanUpdated, ToolCallFinished
from catbuddy.config import ContextSettings, ModelSpec
from catbuddy.context.compaction.plan import Plan, PlanStep, StepStatus
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply

# Codex's update_plan arguments (codex-rs/protocol/src/plan_tool.rs: UpdatePlanArgs, PlanItemArg).
CODEX_ARGS = {
    "explanation": "Start with the parser.",
    "plan": [
        {"step": "Read the parser", "status": "completed"},
        {"step": "Fix the off-by-one", "status": "in_progress"},
        {"step": "Run the tests", "status": "pending"},
    ],
}
# Claude's TodoWrite / mistral-vibe's todo shape (vibe/core/tools/builtins/todo.py: TodoItem).
TODO_ARGS = {
    "todos": [
        {"id": "1", "content": "Read the parser", "status": "completed", "priority": "high"},
        {"id": "2", "content": "Fix the off-by-one", "status": "in_progress", "priority": "medium"},
    ]
}


def plan_call(args, **kw):
    return Reply.tool_call("update_plan", args, chunk_size=WHOLE, **kw)


def tool_results(request) -> list[str]:
    return [content_text(m.get("content")) for m in request.messages if m.get("role") == "tool"]


async def test_a_codex_shaped_plan_is_set_shown_and_stored(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([plan_call(CODEX_ARGS), Reply.text("On it.")])
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("fix the parser"), 20)

    plan = loop.current_plan()
    assert plan is not None and [s.status for s in plan.steps] == [StepStatus.DONE, StepStatus.IN_PROGRESS,
                                                                   StepStatus.PENDING]  # fmt: skip
    assert plan.current == PlanStep("Fix the off-by-one", StepStatus.IN_PROGRESS)
    event = events.of(PlanUpdated)[-1]
    assert event.steps[1] == {"step": "Fix the off-by-one", "status": "in_progress"}
    assert event.explanation == "Start with the parser."
    assert tool_results(llm.requests[1]) == [plan.render()]
    assert "2. [>] Fix the off-by-one" in plan.render()
    finished = events.of(ToolCallFinished)[-1]
    assert finished.meta["summary"] == "1/3 done, now: Fix the off-by-one"


async def test_a_todowrite_shaped_list_with_completed_is_accepted(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([plan_call(TODO_ARGS), Reply.text("ok")])
    loop, _ = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 20)

    plan = loop.current_plan()
    assert plan is not None and plan.progress() == "1/2 done"


async def test_each_call_replaces_the_whole_list(scripted_llm_factory, make_loop):
    second = {"plan": [{"step": "Only this", "status": "in_progress"}]}
    llm = scripted_llm_factory([plan_call(CODEX_ARGS), plan_call(second), Reply.text("ok")])
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 20)

    assert loop.current_plan() == Plan((PlanStep("Only this", StepStatus.IN_PROGRESS),))
    assert len(events.of(PlanUpdated)) == 2


async def test_invalid_plans_are_error_results_naming_the_problem(scripted_llm_factory, make_loop):
    two_running = {"plan": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}
    unknown = {"plan": [{"step": "a", "status": "blocked"}]}
    too_long = {"plan": [{"step": f"step {i}", "status": "pending"} for i in range(200)]}
    llm = scripted_llm_factory(
        [plan_call(two_running), plan_call(unknown), plan_call(too_long), plan_call({}), Reply.text("ok")]
    )
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 20)

    results = [e.result for e in events.of(ToolCallFinished)]
    assert all(e.is_error for e in events.of(ToolCallFinished))
    assert "steps 1, 2 are all in_progress" in results[0]
    assert "unknown status 'blocked'" in results[1] and "pending, in_progress or done" in results[1]
    assert "200 steps; at most 50" in results[2]
    assert "`plan` is missing" in results[3]
    assert loop.current_plan() is None and not events.of(PlanUpdated)


async def test_the_plan_is_sent_verbatim_in_every_request_after_three_compactions(
    scripted_llm_factory, make_loop
):
    plan_args = {"plan": [{"step": f"Step number {i}", "status": "done" if i < 3 else "pending"}
                          for i in range(6)]}  # fmt: skip
    plan_args["plan"][3]["status"] = "in_progress"
    first_turn = [plan_call(plan_args), Reply.text("planned", chunk_size=WHOLE)]

    def reply(body):
        return first_turn.pop(0) if first_turn else Reply.text("done", chunk_size=WHOLE)

    llm = scripted_llm_factory([Brain(reply=reply)] * 200)
    context = ContextSettings(compact_message_threshold=8, compact_keep_recent=4)
    loop, _ = await make_loop(llm, context=context, models={"scripted": ModelSpec(32_000, 1000)})
    await asyncio.wait_for(loop.run_turn("make a plan"), 20)
    rendered = loop.current_plan().render()

    turn = 0
    while len(summary_requests(llm)) < 3:
        await asyncio.wait_for(loop.run_turn(f"turn {turn}: carry on"), 20)
        turn += 1
        assert turn < 40, "three compactions never happened"
    for _ in range(3):  # and some more turns after the third
        await asyncio.wait_for(loop.run_turn("more"), 20)

    third = llm.requests.index(summary_requests(llm)[2])
    after = [r for r in llm.requests[third + 1 :] if not is_summary_request(r.body)]
    assert len(after) >= 3
    for request in after:
        sent = json.dumps(request.messages, ensure_ascii=False)
        assert json.dumps(rendered, ensure_ascii=False)[1:-1] in sent
        # The tool call that set it was folded long ago: the pinned summary is what carries it.
        assert not any(
            m.get("role") == "tool"
            for m in request.messages
            if "Step number" in content_text(m.get("content"))
        )
    assert (
        loop.conversation.history.compaction_data["plan"]
        == Plan.from_json(loop.conversation.history.compaction_data["plan"]).to_json()
    )


async def test_recall_finds_an_earlier_version_of_the_plan(scripted_llm_factory, make_loop):
    old = {"plan": [{"step": "Rewrite the tokenizer in Rust", "status": "in_progress"}]}
    new = {"plan": [{"step": "Patch the tokenizer in Python", "status": "in_progress"}]}
    llm = scripted_llm_factory(
        [
            plan_call(old),
            plan_call(new),
            Reply.tool_call("recall", {"query": "tokenizer Rust"}),
            Reply.text("ok"),
        ]
    )
    loop, events = await make_loop(llm)

    await asyncio.wait_for(loop.run_turn("go"), 20)

    found = events.of(ToolCallFinished)[-1].result
    assert "1. [>] Rewrite the tokenizer in Rust" in found and "tool result (update_plan)" in found


async def test_a_resumed_session_announces_its_plan(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([plan_call(CODEX_ARGS), Reply.text("ok")])
    first, _ = await make_loop(llm)
    await asyncio.wait_for(first.run_turn("plan"), 20)
    session_id = first.session_id
    await first.aclose()

    again, events = await make_loop(llm, resume=session_id)

    assert again.current_plan() == first.current_plan()
    assert events.of(PlanUpdated)[0].steps == [s.to_json() for s in again.current_plan().steps]
