"""One turn: compact if due → govern → call the model → run the tool calls → repeat.

The runner is handed a ``TurnContext`` (docs/architecture.md §5) and reports everything on its bus.
Stopping cancels the task that runs the turn; the runner then keeps the partial reply and answers
every unanswered call with a "cancelled" result, so the session on disk is always a valid conversation.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.agent import hook_steps
from catbuddy.agent.compaction import CompactionManager
from catbuddy.agent.events import (
    AssistantMessage,
    ContextStatus,
    ContextTooLong,
    ErrorOccurred,
    GovernanceReported,
    IterationCapReached,
    Notice,
    ReasoningDelta,
    Retrying,
    TextDelta,
    TurnEndReason,
    UsageReported,
)
from catbuddy.agent.reply_bounds import BoundedReply, bound_reply
from catbuddy.agent.tool_calls import ToolCallBatch
from catbuddy.agent.turn_context import RequestParts, TurnContext
from catbuddy.agent.user_input import user_message
from catbuddy.context.counting.measure import calibrated
from catbuddy.context.governance.bound import govern_by_bound
from catbuddy.context.governance.governor import ContextOverflowError, GovernedContext
from catbuddy.context.governance.governor_steps import repair
from catbuddy.context.governance.report import govern_request
from catbuddy.llm.errors import ContextLengthExceeded, LLMError, ProviderError
from catbuddy.llm.types import Completed, LLMResponse, ReasoningChunk, TextChunk
from catbuddy.messages import with_valid_arguments

log = logging.getLogger(__name__)

CUT_OFF_MARK = "\n\n[reply cut off: the connection to the provider broke while it was streaming]"
OVERFLOW_HINT = "Raise context_window for this model, remove skills or MCP servers, or /compact."


@dataclass
class TurnOutcome:
    reason: TurnEndReason
    text: str = ""
    iterations: int = 0


@dataclass
class _CallState:
    """What a model call has produced so far, so a stop can keep it."""

    text: list[str] = field(default_factory=list)


def govern(ctx: TurnContext, parts: RequestParts) -> GovernedContext:
    """The request for the current history; also what /context and the status bar measure."""
    return govern_request(
        prompt=parts.prompt,
        tools=parts.tools,
        history=ctx.conversation.history,
        counter=ctx.counter,
        budget=ctx.budget,
        context=ctx.settings.context,
        calibration=ctx.calibration_factor,
        compactable=parts.compactable,
    )


def context_status(ctx: TurnContext, governed: GovernedContext) -> ContextStatus:
    return ContextStatus(
        used=governed.size.tokens, budget=ctx.budget.limit, compact_at=ctx.compact_threshold, model=ctx.model
    )


class TurnRunner:
    def __init__(self, ctx: TurnContext, compaction: CompactionManager) -> None:
        self.ctx = ctx
        self.compaction = compaction
        self._tool_calls: ToolCallBatch | None = None
        self._call_state: _CallState | None = None
        self.parts: RequestParts | None = None  # the last model call's prompt and schemas
        self.governed: GovernedContext | None = None  # the last request answered, counted exactly
        self.images: Sequence[Path] = ()  # `--image FILE`: attached to the user's message

    # --- the turn ---------------------------------------------------------------------------------

    async def run(self, user_text: str, message_meta: Mapping[str, Any] | None = None) -> TurnOutcome:
        """One turn for ``user_text``; ``message_meta`` is kept beside the user's message (what the user
        put back since the last turn, for the compaction ledger)."""
        ctx = self.ctx
        last_text = ""
        # Hooks first, then @-mentions and images (agent/user_input.py): a refusal raises before anything is kept.
        message = await user_message(ctx, await hook_steps.on_prompt(ctx, user_text), self.images)
        stop_blocks = 0
        max_iterations = ctx.settings.max_iterations
        for iteration in range(1, max_iterations + 1):
            # One durable step per model call: its records (the user's message for the first call,
            # governance, reply, usage, tool results) are written as they happen, fsync'd together.
            with ctx.conversation.group():
                if iteration == 1:
                    ctx.conversation.append(message, message_meta)
                outcome = await self._iteration(iteration, last_text)
            if isinstance(outcome, TurnOutcome):
                go_on = await self._stop_hooks(outcome, stop_blocks)
                if go_on is None:
                    return outcome
                stop_blocks += 1
                with ctx.conversation.group():  # the hook's reason, for the model's next call
                    ctx.conversation.append({"role": "user", "content": go_on})
                last_text = outcome.text
                continue
            last_text = outcome
        notice = (
            f"Stopped after {max_iterations} model calls in one turn (max_iterations). "
            "Send a message to let catbuddy continue."
        )
        ctx.bus.emit(Notice(notice, "warning"))
        ctx.bus.emit(IterationCapReached(max_iterations))
        return TurnOutcome(TurnEndReason.ITERATION_CAP, last_text, max_iterations)

    async def _stop_hooks(self, outcome: TurnOutcome, blocks: int) -> str | None:
        if outcome.reason is not TurnEndReason.DONE:
            return None
        return await hook_steps.on_stop(self.ctx, outcome.text, blocks)

    async def _iteration(self, iteration: int, last_text: str) -> TurnOutcome | str:
        """One model call and its tool calls: the turn's outcome if it ends here, else the reply text."""
        ctx = self.ctx
        parts = self.parts = RequestParts.build(ctx)  # prompt and schemas: once per model call
        governed = self._govern_by_bound(parts)
        if governed is None:
            await self.compaction.maybe_compact(parts)
            try:
                governed = self.govern(parts)
            except ContextOverflowError as exc:
                self._error(str(exc), OVERFLOW_HINT)
                return TurnOutcome(TurnEndReason.ERROR, last_text, iteration)
        reply = await self.call_model(governed, parts)
        if reply is None:
            return TurnOutcome(TurnEndReason.ERROR, last_text, iteration)
        governed = self.governed or governed  # counted exactly by now, whichever way it was sent
        last_text = reply.message.get("content") or last_text
        calls = reply.message.get("tool_calls") or []
        if not calls:
            return TurnOutcome(TurnEndReason.DONE, last_text, iteration)
        # The reply is in the history now: while the tools run, the status bar shows what /context would,
        # not the request just answered. Counted, not governed again (a second pass over the history per
        # call would double governance's cost); the next request and the turn's end report it governed.
        ctx.bus.emit(self._status_with_reply(governed, reply.message))
        self._tool_calls = ToolCallBatch(ctx, calls, reply)
        await self._tool_calls.run()
        self._tool_calls = None
        return last_text

    def _status_with_reply(self, governed: GovernedContext, message: dict[str, Any]) -> ContextStatus:
        """What governing the history now would give — the request just sent, the reply, and the
        placeholder results repair puts after its unanswered calls — counted without a second pass over
        the history. Exact unless those tokens would tip governance into stubbing or snipping; then this
        is the larger, unreduced figure until the next request reports the governed one."""
        ctx = self.ctx
        with_placeholders, _, _ = repair([message])
        raw = governed.size.raw + sum(ctx.counter.count_message(m) for m in with_placeholders)
        return ContextStatus(
            used=calibrated(raw, ctx.calibration_factor),  # as learned from this reply's usage, if any
            budget=ctx.budget.limit,
            compact_at=ctx.compact_threshold,
            model=ctx.model,
        )

    def _govern_by_bound(self, parts: RequestParts) -> GovernedContext | None:
        """Before any tokenizer has loaded (the first call of a `catbuddy run`): the request, when the
        byte bound proves exact governance would make it and compaction is not due (context/governance/bound.py)."""
        ctx = self.ctx
        if ctx.counter.loaded or self.compaction.due_by_messages():
            return None
        return govern_by_bound(
            prompt=parts.prompt,
            tools=parts.tools,
            history=ctx.conversation.history,
            encoding_name=ctx.counter.encoding_name,
            budget=ctx.budget,
            context=ctx.settings.context,
            calibration=ctx.calibration_factor,
            compact_threshold=ctx.compact_threshold,
            compactable=parts.compactable,
        )

    async def _govern_exactly(self, parts: RequestParts, sent: GovernedContext) -> GovernedContext:
        """The exact governance of a request sent on the byte bound: the counter gets ready in a thread."""
        await asyncio.to_thread(self.ctx.counter.ready)
        governed = self.govern(parts)
        if governed.messages != sent.messages:  # the bound's proof says this cannot happen
            log.warning("the request sent on the byte bound differs from the exactly governed one")
        return governed

    def govern(self, parts: RequestParts) -> GovernedContext:
        ctx = self.ctx
        governed = govern(ctx, parts)
        report = governed.report
        if report.changed:
            ctx.bus.emit(GovernanceReported(report.to_dict(), report.summary()))
        ctx.bus.emit(context_status(ctx, governed))
        return governed

    def _error(self, message: str, hint: str = "", code: str = "") -> None:
        self.ctx.bus.emit(ErrorOccurred(message, hint, code))

    # --- the model call -------------------------------------------------------------------------

    async def call_model(self, governed: GovernedContext, parts: RequestParts) -> BoundedReply | None:
        """Stream one reply. On a context-length error: compact (or count stricter) and retry once."""
        ctx = self.ctx
        retried = False
        while True:
            try:
                return await self._stream(governed, parts)
            except ContextLengthExceeded as exc:
                if retried:
                    self._error(
                        f"The request is still too large for {ctx.model}: {exc.message}",
                        exc.hint,
                        code="context_length_exceeded",
                    )
                    return None
                retried = True
                ctx.bus.emit(ContextTooLong(exc.message))
                if not await self.compaction.recover_from_overflow(parts):
                    factor = ctx.calibration.tighten(ctx.model)
                    ctx.bus.emit(
                        Notice(
                            f"The provider refused the request as too long; calibration is now ×{factor:.2f} "
                            "in this process, until the provider reports its usage.",
                            "warning",
                        )
                    )
                try:
                    governed = self.govern(parts)
                except ContextOverflowError as overflow:
                    self._error(str(overflow), OVERFLOW_HINT)
                    return None
            except LLMError as exc:
                # The user saw it stream; the session (and the model, next time) must show it too,
                # marked as cut off when the stream broke.
                self._keep_partial_text(cut_off=bool(exc.partial_text))
                self._error(exc.message, exc.hint)
                return None

    async def _stream(self, governed: GovernedContext, parts: RequestParts) -> BoundedReply:
        ctx = self.ctx
        provider = await ctx.provider.get()
        state = self._call_state = _CallState()

        def on_retry(attempt: int, delay: float, reason: str) -> None:
            ctx.bus.emit(Retrying(attempt, delay, reason))

        response: LLMResponse | None = None
        exact: asyncio.Task[GovernedContext] | None = None
        try:
            async for piece in provider.stream_chat(
                model=ctx.model,
                messages=with_valid_arguments(governed.messages),
                tools=parts.tools or None,
                on_retry=on_retry,
                reasoning_effort=ctx.settings.options_for(ctx.model).reasoning_effort,
            ):
                if governed.bound and exact is None:  # the request is out: count it while the model answers
                    exact = asyncio.get_running_loop().create_task(self._govern_exactly(parts, governed))
                if isinstance(piece, TextChunk):
                    state.text.append(piece.text)
                    ctx.bus.emit(TextDelta(piece.text))
                elif isinstance(piece, ReasoningChunk):
                    ctx.bus.emit(ReasoningDelta(piece.text))
                elif isinstance(piece, Completed):
                    response = piece.response
            if exact is not None:
                governed = await exact  # before the reply joins the history it measures
        finally:
            if exact is not None and not exact.done():
                exact.cancel()
        self._call_state = None
        self.governed = governed
        if response is None:
            raise ProviderError("the stream ended without a final response", "Try again; check the endpoint.")
        message = dict(response.message)
        message.setdefault("content", None)
        reply = bound_reply(message, ctx.settings.tools)
        ctx.conversation.append(reply.message)
        ctx.bus.emit(AssistantMessage(reply.message))
        self._observe_usage(response, governed)
        return reply

    def _observe_usage(self, response: LLMResponse, governed: GovernedContext) -> None:
        usage = response.usage
        if usage is None or not usage.prompt_tokens:
            return
        ctx = self.ctx
        counted = governed.size.raw
        ratio = ctx.calibration.observe(ctx.model, usage.prompt_tokens, counted)
        cached = usage.cached_tokens or 0
        ctx.bus.emit(
            UsageReported(
                usage.prompt_tokens,
                usage.completion_tokens or 0,
                counted,
                ratio,
                cached,
                cache_write_tokens=usage.cache_write_tokens or 0,
                reasoning_tokens=usage.reasoning_tokens or 0,
                model=ctx.model,
            )
        )

    # --- stopping -------------------------------------------------------------------------------

    def keep_partial_work(self) -> None:
        """After a stop: keep the streamed text, answer every unanswered call as cancelled."""
        self._keep_partial_text()
        if self._tool_calls is not None:
            self._tool_calls.cancel_unanswered()
            self._tool_calls = None

    def _keep_partial_text(self, *, cut_off: bool = False) -> None:
        state, self._call_state = self._call_state, None
        if state is not None and state.text:
            text = "".join(state.text) + (CUT_OFF_MARK if cut_off else "")
            message = {"role": "assistant", "content": text}
            self.ctx.conversation.append(message)
            self.ctx.bus.emit(AssistantMessage(message))
