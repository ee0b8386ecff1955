"""The tool calls of one assistant reply: approve each, run them, record every result in call order.

Consecutive read-only calls run together; anything that writes runs alone, in order. Every call gets
exactly one result message, also when it is refused, unknown, malformed or cancelled, so the session
on disk is always a valid conversation (docs/architecture.md §5).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from catbuddy.agent.approval import HEADLESS_REFUSAL, preview_for, refusal_text
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalRequested,
    ApprovalResolved,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
)
from catbuddy.agent.reply_bounds import BoundedReply
from catbuddy.agent.turn_context import TurnContext
from catbuddy.memory.tool_writes import begin_tool_write, finish_tool_write
from catbuddy.redact import redact_text
from catbuddy.text import fit_middle
from catbuddy.tools.base import Tool, ToolResult
from catbuddy.tools.registry import run_tool

CANCELLED_RESULT = "[Cancelled: the user stopped this call before it finished]"
REFUSED_HEADLESS = "refused_headless"

Call = dict[str, Any]


class ToolCallBatch:
    """Runs the calls of one reply; after a stop, ``cancel_unanswered`` answers what is left."""

    def __init__(self, ctx: TurnContext, calls: list[Call], bounded: BoundedReply | None = None) -> None:
        self.ctx = ctx
        self.calls = calls
        self._refusals = bounded.refusals if bounded else {}  # answered without running (over a bound)
        self._over_count = bounded.over_count if bounded else 0
        self._answered: set[str] = set()

    async def run(self) -> None:
        if self._over_count:
            limit = self.ctx.settings.tools.max_calls_per_reply
            self.ctx.bus.emit(
                Notice(
                    f"The model asked for {len(self.calls):,} tool calls in one reply; the first {limit} "
                    f"run, the other {self._over_count:,} were answered 'not run' (tools.max_calls_per_reply).",
                    "warning",
                )
            )
        batch: list[tuple[Call, dict[str, Any]]] = []
        for index, call in enumerate(self.calls):
            if call["id"] in self._refusals:
                await self._flush(batch)  # results stay in call order
                batch = []
                result = ToolResult(self._refusals[call["id"]], is_error=True)
                self._finish(call, result, 0.0, announce=index < self.ctx.settings.tools.max_calls_per_reply)
                continue
            args, error = parse_arguments(call)
            tool = self.ctx.registry.get(call["function"]["name"])
            self.ctx.bus.emit(
                ToolCallStarted(
                    call["id"],
                    call["function"]["name"],
                    call["function"].get("arguments") or "",
                    tool.summary(args) if tool and args else "",
                )
            )
            refusal = error or (self._unknown_tool(call["function"]["name"]) if tool is None else None)
            if refusal is None and tool is not None:
                refusal = await self._approve(call, tool, args)
            if refusal is not None:
                await self._flush(batch)
                batch = []
                self._finish(call, ToolResult(refusal, is_error=True), 0.0)
                continue
            assert tool is not None
            if tool.read_only:
                batch.append((call, args))
                continue
            await self._flush(batch)
            batch = []
            await self._flush([(call, args)])
        await self._flush(batch)

    def cancel_unanswered(self) -> None:
        for call in self.calls:
            self._finish(call, ToolResult(CANCELLED_RESULT, is_error=True), 0.0)

    def _unknown_tool(self, name: str) -> str:
        available = ", ".join(self.ctx.registry.names())
        return f"Error: there is no tool named {name!r}. Available tools: {available}."

    # --- approval -------------------------------------------------------------------------------

    async def _approve(self, call: Call, tool: Tool, args: dict[str, Any]) -> str | None:
        """None when the call may run; otherwise the text the model gets instead of a result."""
        ctx = self.ctx
        decision = ctx.policy.decide(tool, args)
        if decision.action == "allow":
            return None
        if decision.action == "deny":
            ctx.conversation.record(
                "approval", tool=tool.name, call_id=call["id"], decision="denied_by_rule", reason=decision.reason
            )
            return f"Refused by catbuddy's safety rules: {decision.reason}"
        preview = await asyncio.to_thread(preview_for, tool.name, args, ctx.tools)
        if ctx.interactive:
            ctx.approvals.expect(call["id"])
        ctx.bus.emit(
            ApprovalRequested(
                call["id"],
                tool.name,
                args,
                tool.summary(args),
                preview,
                decision.suggested_pattern or "",
                decision.reason,
                answerable=ctx.interactive,
                sandbox=decision.sandbox,
            )
        )
        if not ctx.interactive:
            ctx.conversation.record("approval", tool=tool.name, call_id=call["id"], decision=REFUSED_HEADLESS)
            ctx.bus.emit(ApprovalResolved(call["id"], tool.name, REFUSED_HEADLESS))
            return decision.headless or HEADLESS_REFUSAL.format(tool=tool.name, mode=ctx.policy.mode)
        answer = await ctx.approvals.wait(call["id"])
        ctx.conversation.record(
            "approval", tool=tool.name, call_id=call["id"], decision=answer.choice.value, note=answer.note
        )
        ctx.bus.emit(ApprovalResolved(call["id"], tool.name, answer.choice.value, answer.note))
        if not answer.allowed:
            return refusal_text(answer)
        if decision.grant is not None:  # a write to one of catbuddy's own files: this call only
            ctx.tools.grants.allow(decision.grant)
        elif answer.choice is ApprovalChoice.ALLOW_SESSION and decision.rememberable:
            ctx.policy.remember(answer.pattern or decision.suggested_pattern or "")
        return None

    # --- running ----------------------------------------------------------------------------------

    async def _flush(self, batch: list[tuple[Call, dict[str, Any]]]) -> None:
        if not batch:
            return
        started = time.monotonic()
        tasks = [asyncio.ensure_future(self._run_one(call, args)) for call, args in batch]
        try:
            results = await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for (call, _), task in zip(batch, tasks, strict=True):
                if task.done() and not task.cancelled() and task.exception() is None:
                    result, duration = task.result()
                    self._finish(call, result, duration)
            raise
        for (call, _), (result, duration) in zip(batch, results, strict=True):
            self._finish(call, result, duration or time.monotonic() - started)

    async def _run_one(self, call: Call, args: dict[str, Any]) -> tuple[ToolResult, float]:
        tool = self.ctx.registry.get(call["function"]["name"])
        assert tool is not None
        started = time.monotonic()
        # A write to a MEMORY.md keeps the previous version first (docs/architecture.md §13).
        memory_write = await asyncio.to_thread(
            begin_tool_write, self.ctx.tools, tool.name, args, self.ctx.conversation.id
        )
        try:
            result = await run_tool(tool, args, self.ctx.tools)
        finally:
            finish_tool_write(memory_write)
        return result, time.monotonic() - started

    def _finish(self, call: Call, result: ToolResult, duration: float, *, announce: bool = True) -> None:
        if call["id"] in self._answered:
            return
        self._answered.add(call["id"])
        # The keys catbuddy holds never reach the model, the session file or the screen.
        content = fit_middle(
            redact_text(result.content, self.ctx.secrets, patterns=False),
            self.ctx.settings.tools.max_result_chars,
            why=" (tools.max_result_chars)",
        )
        display = redact_text(result.display, self.ctx.secrets, patterns=False) if result.display else None
        self.ctx.conversation.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        if announce:
            self.ctx.bus.emit(
                ToolCallFinished(call["id"], call["function"]["name"], content, result.is_error, duration, display)
            )


def parse_arguments(call: Call) -> tuple[dict[str, Any], str | None]:
    """The call's arguments as a dict, or the error the model gets for them."""
    raw = call["function"].get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError) as exc:
        return {}, f"Error: the arguments are not valid JSON ({exc}). Send a JSON object."
    if not isinstance(args, dict):
        return {}, "Error: the arguments must be a JSON object."
    return args, None
