"""The COMPACT state's work: when to compact, doing it, and never looping (docs/architecture.md §5).

``CompactionState`` lives as long as the conversation (failures in a row, what was last compacted);
a ``CompactionManager`` is made per turn from it and the turn's context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catbuddy.agent.events import CompactionFinished, LoopState, Notice
from catbuddy.agent.turn_context import RequestParts, TurnContext
from catbuddy.context.compactor import CompactionFailed, CompactionPlan, Compactor, plan_compaction
from catbuddy.context.measure import RequestSize, measure_request
from catbuddy.context.tokens import counter_for

NOTHING_TO_COMPACT = "Nothing to compact yet: the history is already short."


@dataclass
class CompactionState:
    failures: int = 0  # failures in a row; at the limit auto-compaction pauses until /compact
    compacted_through: str | None = None  # newest message id when we last compacted
    warned_fixed_too_big: bool = False


class CompactionManager:
    def __init__(self, ctx: TurnContext, state: CompactionState) -> None:
        self.ctx = ctx
        self.state = state

    @property
    def paused(self) -> bool:
        return self.state.failures >= self.ctx.settings.context.max_compact_failures

    # --- measuring ------------------------------------------------------------------------------

    def measure(self, parts: RequestParts | None = None, *, with_history: bool = True) -> RequestSize:
        """The request as it stands, before governance: what the trigger is held to."""
        ctx = self.ctx
        parts = parts or RequestParts.build(ctx)
        history = ctx.conversation.history
        return measure_request(
            ctx.counter,
            system_prompt=parts.prompt.text,
            tools=parts.tools,
            summary=history.summary,
            history=history.messages if with_history else (),
            calibration=ctx.calibration_factor,
        )

    def _nothing_new(self) -> bool:
        entries = self.ctx.conversation.history.entries
        return bool(entries) and entries[-1].id == self.state.compacted_through

    def _plan(self) -> CompactionPlan | None:
        return plan_compaction(self.ctx.conversation.history.entries, self.ctx.settings.context.compact_keep_recent)

    # --- triggers -------------------------------------------------------------------------------

    def due(self, parts: RequestParts | None = None) -> str | None:
        """Why auto-compaction should run now, or None."""
        settings = self.ctx.settings.context
        if len(self.ctx.conversation.history.entries) > settings.compact_message_threshold:
            return f"more than {settings.compact_message_threshold} messages"
        if self.measure(parts).tokens > self.ctx.compact_threshold:
            return f"context above {settings.compact_token_ratio:.0%} of the budget"
        return None

    async def maybe_compact(self, parts: RequestParts) -> None:
        ctx = self.ctx
        if not ctx.settings.context.auto_compact or self.paused:
            return
        reason = self.due(parts)
        if reason is None:
            return
        fixed = self.measure(parts, with_history=False).tokens
        threshold = ctx.compact_threshold
        if self._nothing_new() or fixed > threshold:
            # Compacting again cannot help: what is too big is not the history.
            if fixed > threshold and not self.state.warned_fixed_too_big:
                self.state.warned_fixed_too_big = True
                ctx.bus.emit(
                    Notice(
                        f"Not compacting: the fixed part of the prompt (system prompt, tool schemas, summary) is "
                        f"{fixed:,} tokens, above the compaction threshold of {threshold:,}. "
                        "Trim AGENTS.md/skills/MCP servers or use a model with a larger window.",
                        "warning",
                    )
                )
            return
        if self._plan() is None:
            return
        await self.run(parts, reason=reason)

    async def recover_from_overflow(self, parts: RequestParts) -> bool:
        """After a provider context-length error: compact once if that can help."""
        if self.paused or self._plan() is None:
            return False
        result = await self.run(parts, reason="the provider said the context is too long")
        return result.ok

    # --- doing it -------------------------------------------------------------------------------

    async def run(
        self, parts: RequestParts, *, reason: str, instructions: str | None = None
    ) -> CompactionFinished:
        ctx = self.ctx
        plan = self._plan()
        if plan is None:
            event = CompactionFinished(False, 0, 0, 0, 0, NOTHING_TO_COMPACT)
            ctx.bus.emit(event)
            return event
        previous_state = ctx.bus.state
        ctx.bus.set_state(LoopState.COMPACT)
        try:
            return await self._compact(parts, plan, reason, instructions)
        finally:
            ctx.bus.set_state(previous_state)

    async def _compact(
        self, parts: RequestParts, plan: CompactionPlan, reason: str, instructions: str | None
    ) -> CompactionFinished:
        ctx = self.ctx
        conversation = ctx.conversation
        tokens_before = self.measure(parts).tokens
        try:
            result = await self._compactor().compact(
                conversation.history.summary, [entry.message for entry in plan.fold], instructions
            )
        except CompactionFailed as exc:
            self.state.failures += 1
            text = f"Compaction failed: {exc}. The history is unchanged."
            if self.paused:
                text += " Auto-compaction is paused after repeated failures; run /compact to try again."
            conversation.record("compaction_failed", reason=str(exc), failures=self.state.failures)
            ctx.bus.emit(Notice(text, "warning"))
            event = CompactionFinished(False, 0, tokens_before, tokens_before, 0, text)
            ctx.bus.emit(event)
            return event
        record_id = conversation.session.append_compaction(
            result.summary,
            plan.folded_through,
            reason=reason,
            instructions=instructions or "",
            folded_messages=len(plan.fold),
            chunks=result.chunks,
            tokens_replaced=result.tokens_replaced,
            summary_tokens=result.summary_tokens,
        )
        conversation.fold(result.summary, plan.keep, record_id)
        self.state.failures = 0
        self.state.compacted_through = plan.keep[-1].id if plan.keep else plan.folded_through
        self.state.warned_fixed_too_big = False
        tokens_after = self.measure(parts).tokens
        parts_note = f", {result.chunks} parts" if result.chunks > 1 else ""
        text = (
            f"Compacted {len(plan.fold)} messages into a {result.summary_tokens:,}-token summary "
            f"({tokens_before:,} → {tokens_after:,} tokens{parts_note})."
        )
        event = CompactionFinished(
            True, len(plan.fold), tokens_before, tokens_after, result.summary_tokens, text, result.summary, record_id
        )
        ctx.bus.emit(event)
        return event

    def _compactor(self) -> Compactor:
        ctx = self.ctx
        model = ctx.settings.compact_model or ctx.model
        spec = ctx.settings.model_spec(model)

        async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> str:
            provider = await ctx.provider.get()
            response = await provider.complete(model=model, messages=messages, max_tokens=max_tokens)
            return str(response.message.get("content") or "")

        # The summary request goes to ``model``: count with its tokenizer and hold it to its own
        # calibration, so it fits that model's window however its tokenizer differs from ours.
        return Compactor(
            counter_for(ctx.settings.encoding_for(model)),
            context_window=min(spec.context_window, ctx.budget.context_window),
            max_output_tokens=spec.max_output_tokens,
            safety_margin=ctx.settings.context.safety_margin,
            summarize=summarize,
            calibration=ctx.calibration.factor(model),
        )
