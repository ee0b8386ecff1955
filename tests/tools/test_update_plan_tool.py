"""`update_plan` on its own (tools/plan.py): the stored form, and mistral-vibe's read action."""

from __future__ import annotations

from catbuddy.context.compaction.plan import Plan, PlanStep, StepStatus
from catbuddy.tools.base import ToolContext
from catbuddy.tools.plan import UpdatePlanTool
from catbuddy.tools.registry import run_tool


async def test_the_plan_is_returned_as_text_and_stored_as_data(ctx: ToolContext) -> None:
    result = await run_tool(UpdatePlanTool(), {"plan": [{"step": "Do it", "status": "in_progress"}]}, ctx)

    assert result.content == "Plan (0/1 done):\n1. [>] Do it" and not result.is_error
    assert result.meta == {"plan": {"steps": [{"step": "Do it", "status": "in_progress"}]}}


async def test_a_read_action_returns_the_current_plan(ctx: ToolContext) -> None:
    # mistral-vibe's todo tool reads with {"action": "read"} (vibe/core/tools/builtins/todo.py).
    assert (await run_tool(UpdatePlanTool(), {"action": "read"}, ctx)).content == "No plan yet."
    ctx.current_plan = lambda: Plan((PlanStep("Ship", StepStatus.DONE),))

    result = await run_tool(UpdatePlanTool(), {"action": "read"}, ctx)

    assert result.content == "Plan (1/1 done):\n1. [x] Ship" and not result.meta  # reading sets nothing


async def test_the_step_limit_is_a_setting(make_ctx) -> None:
    ctx = make_ctx(plan_max_steps=2)
    three = {"plan": [{"step": s, "status": "pending"} for s in "abc"]}

    result = await run_tool(UpdatePlanTool(), three, ctx)

    assert result.is_error and "3 steps; at most 2" in result.content and "unchanged" in result.content
