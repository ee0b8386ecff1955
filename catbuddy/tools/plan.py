"""The ``update_plan`` tool: the model keeps a short list of steps, each pending, in progress or done,
and sends the whole list every call (docs/architecture.md §5c).

The tool changes nothing on disk: the plan it sets is stored in its call's meta (``extra["plan"]``),
so the session file is the plan's history (``recall`` finds earlier versions), compaction pins the
newest one in the summary, and front ends read it from the ``PlanUpdated`` event the agent reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from catbuddy.context.compaction.plan import PLAN_META_KEY, Plan, PlanError, parse_plan
from catbuddy.safety.kinds import ToolKind
from catbuddy.tool_meta import ToolMeta
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult

STEP_SCHEMA = {
    "type": "object",
    "properties": {
        "step": {"type": "string"},
        "status": {"type": "string", "enum": ["pending", "in_progress", "done"]},
    },
    "required": ["step", "status"],
}


class UpdatePlanTool(Tool):
    name = "update_plan"
    parameters = {
        "type": "object",
        "properties": {
            "plan": {"type": "array", "items": STEP_SCHEMA},
            "explanation": {"type": "string"},
        },
        # `plan` is needed, but not declared required: models that send `todos` (Claude's, opencode's and
        # mistral-vibe's shape) are accepted too, and a missing list gets parse_plan's own message.
        "required": [],
    }
    kind = ToolKind.READ  # nothing outside the conversation changes: never asks, allowed in plan mode

    def summary(self, args: Mapping[str, Any]) -> str:
        steps = args.get("plan", args.get("todos"))
        return f"{len(steps)} steps" if isinstance(steps, list) else ""

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        plan = Plan.from_json(meta.extra.get(PLAN_META_KEY))
        if plan is None:
            return super().result_summary(args, meta)
        current = plan.current
        return plan.progress() + (f", now: {current.text}" if current else "")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if args.get("action") == "read" and args.get("plan") is None and args.get("todos") is None:
            # mistral-vibe's todo tool reads with {"action": "read"}
            current = ctx.current_plan() if ctx.current_plan is not None else None
            return ToolResult(current.render() if current is not None else "No plan yet.")
        try:
            plan = parse_plan(args, ctx.settings.tools.plan_max_steps)
        except PlanError as exc:
            raise ToolError(f"{exc.message} The plan is unchanged; send the whole corrected list.") from None
        return ToolResult(plan.render(), meta={PLAN_META_KEY: plan.to_json()})
