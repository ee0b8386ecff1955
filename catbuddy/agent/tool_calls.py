"""The tool calls of one assistant reply: approve each, run them, record every result in call order.

Consecutive read-only calls run together; anything that writes runs alone, in order. Every call gets
exactly one result message, also when it is refused, unknown, malformed or cancelled, so the session
on disk is always a valid conversation (docs/architecture.md §5). Each result is stored with the call's
``ToolMeta`` beside it (status, exit code, duration, paths changed, ledger facts, the tool's one-line
summary): what the ledger, the TUI after a resume, ``sessions show`` and ``--stream-json`` read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.agent import hook_steps
from catbuddy.agent.approval import RULE_REFUSAL, headless_refusal, refusal_text
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalRequested,
    ApprovalResolved,
    Notice,
    PlanUpdated,
    ToolCallFinished,
    ToolCallStarted,
)
from catbuddy.agent.reply_bounds import BoundedReply
from catbuddy.agent.turn_context import TurnContext
from catbuddy.context.compaction.plan import plan_of
from catbuddy.images import stored_reference, supports_vision
from catbuddy.memory.tool_writes import begin_tool_write, finish_tool_write
from catbuddy.redact import redact, redact_text
from catbuddy.text import fit_middle
from catbuddy.tool_meta import ToolMeta, ToolStatus, describe_outcome, one_line
from catbuddy.tools.base import CURRENT_CALL_ID, Preview, Tool, ToolResult
from catbuddy.tools.registry import run_tool

log = logging.getLogger(__name__)

CANCELLED_RESULT = "[Cancelled: the user stopped this call before it finished]"
REFUSED_HEADLESS = "refused_headless"
DENIED_BY_RULE = "denied_by_rule"
UNKNOWN_TOOL = "unknown tool"

Call = dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    """A call answered without running: what the model reads, and how the call ended."""

    text: str
    status: ToolStatus
    malformed: str = ""  # what the model got wrong, for the ledger


class ToolCallBatch:
    """Runs the calls of one reply; after a stop, ``cancel_unanswered`` answers what is left."""

    def __init__(self, ctx: TurnContext, calls: list[Call], bounded: BoundedReply | None = None) -> None:
        self.ctx = ctx
        self.calls = calls
        self._refusals = bounded.refusals if bounded else {}  # answered without running (over a bound)
        self._over_count = bounded.over_count if bounded else 0
        self._answered: set[str] = set()
        self._images: list[tuple[str, Path]] = []  # (tool, stored image) for the model, after the results

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
                result = ToolResult(self._refusals[call["id"]], is_error=True, status=ToolStatus.REFUSED)
                self._finish(call, result, 0.0, announce=index < self.ctx.settings.tools.max_calls_per_reply)
                continue
            args, error = parse_arguments(call)
            name = call["function"]["name"]
            tool = self.ctx.registry.get(name)
            if tool is not None and error is None:
                args = tool.normalize_args(args)
            self.ctx.bus.emit(
                ToolCallStarted(
                    call["id"],
                    name,
                    call["function"].get("arguments") or "",
                    tool.summary(args) if tool and args else "",
                    tool.kind.value if tool else "",
                )
            )
            refusal = error or (self._unknown_tool(name) if tool is None else None)
            if refusal is None and tool is not None:
                refusal = await self._pre_tool(name, args)  # the user's hooks, before asking the user
            if refusal is None and tool is not None:
                refusal = await self._approve(call, tool, args)
            if refusal is not None:
                await self._flush(batch)
                batch = []
                result = ToolResult(refusal.text, is_error=True, status=refusal.status)
                self._finish(call, result, 0.0, malformed=refusal.malformed)
                continue
            assert tool is not None
            if tool.read_only:
                batch.append((call, args))
                continue
            await self._flush(batch)
            batch = []
            await self._flush([(call, args)])
        await self._flush(batch)
        self._show_images()

    def _show_images(self) -> None:
        """Images tools returned (MCP) reach a model that sees images as one user message after every
        result (a tool message holds text only); others read the results' text, which describes them."""
        if not self._images or not supports_vision(
            self.ctx.model, self.ctx.settings.model_spec(self.ctx.model).vision
        ):
            return
        names = ", ".join(dict.fromkeys(name for name, _ in self._images))
        parts = [{"type": "text", "text": f"[images returned by {names}]"}]
        parts += [stored_reference(path) for _, path in self._images]
        self.ctx.conversation.append({"role": "user", "content": parts})

    def cancel_unanswered(self) -> None:
        for call in self.calls:
            self._finish(call, ToolResult(CANCELLED_RESULT, is_error=True, status=ToolStatus.STOPPED), 0.0)

    def _unknown_tool(self, name: str) -> Refusal:
        available = ", ".join(self.ctx.registry.names())
        text = f"Error: there is no tool named {name!r}. Available tools: {available}."
        return Refusal(text, ToolStatus.ERROR, UNKNOWN_TOOL)

    # --- approval -------------------------------------------------------------------------------

    async def _pre_tool(self, name: str, args: dict[str, Any]) -> Refusal | None:
        reason = await hook_steps.before_tool(self.ctx, name, args)
        return Refusal(reason, ToolStatus.REFUSED) if reason is not None else None

    async def _approve(self, call: Call, tool: Tool, args: dict[str, Any]) -> Refusal | None:
        """None when the call may run; otherwise what the model gets instead of a result."""
        ctx = self.ctx
        decision = ctx.policy.decide(tool, args)
        if decision.action == "allow":
            return None
        if decision.action == "deny":
            ctx.bus.emit(ApprovalResolved(call["id"], tool.name, DENIED_BY_RULE, reason=decision.reason))
            return Refusal(RULE_REFUSAL.format(reason=decision.reason), ToolStatus.REFUSED)
        preview = await asyncio.to_thread(_preview, tool, args, ctx)
        if ctx.interactive:
            ctx.approvals.expect(call["id"])
        ctx.bus.emit(
            ApprovalRequested(
                call["id"],
                tool.name,
                args,
                tool.summary(args),
                preview.text,
                decision.suggested_pattern or "",
                decision.reason,
                answerable=ctx.interactive,
                sandbox=decision.sandbox,
                preview_kind=preview.kind.value,
                remembers=decision.remembers,
            )
        )
        if not ctx.interactive:
            ctx.bus.emit(ApprovalResolved(call["id"], tool.name, REFUSED_HEADLESS))
            text = decision.headless or headless_refusal(tool.name, ctx.policy.mode, decision.reason)
            return Refusal(text, ToolStatus.REFUSED)
        answer = await ctx.approvals.wait(call["id"])
        ctx.bus.emit(ApprovalResolved(call["id"], tool.name, answer.choice.value, answer.note))
        if not answer.allowed:
            return Refusal(refusal_text(answer, decision.reason), ToolStatus.DENIED)
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
        if not tool.read_only and self.ctx.checkpoints is not None:
            # Before the turn's first call that may write: the checkpoint undo goes back to.
            for text in await asyncio.to_thread(self.ctx.checkpoints.before_write):
                self.ctx.bus.emit(Notice(text, "warning"))
            self.ctx.checkpoints.note_writes(await asyncio.to_thread(tool.writes, args, self.ctx.tools))
        started = time.monotonic()
        # A write to a MEMORY.md keeps the previous version first (docs/architecture.md §13).
        memory_writes = await asyncio.to_thread(
            begin_tool_write, self.ctx.tools, tool, args, self.ctx.conversation.id
        )
        CURRENT_CALL_ID.set(call["id"])  # this task's own context: concurrent calls each see theirs
        try:
            result = await run_tool(tool, args, self.ctx.tools)
        finally:
            finish_tool_write(memory_writes)
        result = await hook_steps.after_tool(self.ctx, tool.name, args, result)
        return result, time.monotonic() - started

    def _finish(
        self, call: Call, result: ToolResult, duration: float, *, announce: bool = True, malformed: str = ""
    ) -> None:
        if call["id"] in self._answered:
            return
        self._answered.add(call["id"])
        self._images += [(call["function"]["name"], path) for path in result.images]
        secrets = self.ctx.secrets
        # The keys catbuddy holds never reach the model, the session file or the screen.
        content = fit_middle(
            redact_text(result.content, secrets, patterns=False),
            self.ctx.settings.tools.max_result_chars,
            why=" (tools.max_result_chars)",
        )
        display = redact_text(result.display, secrets, patterns=False) if result.display else None
        meta = redact(self._meta(call, result, duration, malformed).to_json(), secrets, patterns=False)
        self.ctx.conversation.append({"role": "tool", "tool_call_id": call["id"], "content": content}, meta)
        if announce:
            self.ctx.bus.emit(
                ToolCallFinished(
                    call["id"],
                    call["function"]["name"],
                    content,
                    result.outcome.failed,
                    duration,
                    display,
                    meta,
                )
            )
            plan = plan_of(meta)
            if plan is not None:  # the front ends' plan panel and --stream-json (docs/architecture.md §5c)
                self.ctx.bus.emit(
                    PlanUpdated([s.to_json() for s in plan.steps], plan.explanation, call["id"])
                )

    def _meta(self, call: Call, result: ToolResult, duration: float, malformed: str) -> ToolMeta:
        """The call's outcome as data; the tool adds its ledger facts and its one-line summary."""
        meta = ToolMeta(
            status=result.outcome,
            exit_code=result.exit_code,
            duration=round(duration, 3),
            paths=list(result.paths),
            malformed=malformed,
            extra=dict(result.meta),
        )
        tool = self.ctx.registry.get(call["function"]["name"])
        if tool is None or malformed:
            meta.summary = describe_outcome(meta)
            return meta
        args, _ = parse_arguments(call)
        try:
            args = tool.normalize_args(args)
            meta.facts = tool.ledger_facts(args, meta)
            meta.summary = one_line(tool.result_summary(args, meta))
        except Exception:  # a tool's bookkeeping must not cost the call its result
            log.exception("%s could not describe its result", tool.name)
            meta.summary = describe_outcome(meta)
        return meta


def _preview(tool: Tool, args: dict[str, Any], ctx: TurnContext) -> Preview:
    try:
        return tool.preview(args, ctx.tools)
    except Exception:  # no preview rather than no question
        log.exception("%s could not preview a call", tool.name)
        return Preview()


RAW_ARGUMENTS_SHOWN = 2_000  # characters of invalid arguments quoted back to the model


def parse_arguments(call: Call) -> tuple[dict[str, Any], Refusal | None]:
    """The call's arguments as a dict, or what the model gets for them."""
    raw = call["function"].get("arguments") or "{}"
    try:
        args = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError) as exc:
        # The request sends this call back with `{}` (messages.with_valid_arguments): the raw text
        # lives on here, in the result the model reads, and in the session file.
        shown = raw if len(raw) <= RAW_ARGUMENTS_SHOWN else raw[:RAW_ARGUMENTS_SHOWN] + "…"
        text = (
            f"Error: the arguments are not valid JSON ({exc}); they were: {shown}\n"
            "The call is shown to you with {} as its arguments. Send a JSON object."
        )
        return {}, Refusal(text, ToolStatus.ERROR, "arguments that are not valid JSON")
    if not isinstance(args, dict):
        return {}, Refusal(
            "Error: the arguments must be a JSON object.",
            ToolStatus.ERROR,
            "arguments that are not a JSON object",
        )
    return args, None
