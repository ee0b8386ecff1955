"""The COMPACT state's work: when to compact, doing it, undoing it, and never looping
(docs/architecture.md §5).

``CompactionState`` lives as long as the conversation (failures in a row, what was last compacted);
a ``CompactionManager`` is made per turn from it and the turn's context. A compaction builds the
ledger first (code), asks the model for prose — on the live prefix when the whole history fits and
the compact model is the chat model, else in chunks — then pins prose, the user's words and the ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from catbuddy.agent.events import (
    CompactionAttemptFailed,
    CompactionFinished,
    CompactionUndone,
    LoopState,
    Notice,
)
from catbuddy.agent.turn_context import RequestParts, TurnContext
from catbuddy.context.compaction.compactor import (
    CompactionFailed,
    CompactionPlan,
    CompactionResult,
    Compactor,
    plan_compaction,
)
from catbuddy.context.compaction.fold import FoldPrep, finish_fold, prepare_fold
from catbuddy.context.counting.measure import RequestSize, measure_request
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.governor import HISTORY_COUNT_CAP, ContextOverflowError
from catbuddy.context.governance.report import govern_request
from catbuddy.llm.errors import ContextLengthExceeded
from catbuddy.session.history import WorkingHistory

NOTHING_TO_COMPACT = "Nothing to compact yet: the history is already short."
NOTHING_TO_UNDO = "Nothing to undo: this session has no compaction in force."
# The pinned summary's code-carried parts never take more than this share of the budget each, so a
# small window is not filled by them (the configured token figures are the ceiling).
CARRIED_BUDGET_SHARE = 0.08
MIN_CARRIED_TOKENS = 150
PROSE_BUDGET_SHARE = 0.15  # the length the model is asked to aim for, at most


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

    def measure(
        self, parts: RequestParts | None = None, *, with_history: bool = True, cap: int | None = None
    ) -> RequestSize:
        """The request as it stands, before governance: what the trigger is held to (``cap``: counted
        exactly only that far back from the newest message)."""
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
            history_cap=cap,
        )

    def _nothing_new(self) -> bool:
        entries = self.ctx.conversation.history.entries
        return bool(entries) and entries[-1].id == self.state.compacted_through

    def _plan(self) -> CompactionPlan | None:
        return plan_compaction(self.ctx.conversation.history.entries, self.ctx.settings.context.compact_keep_recent)

    # --- triggers -------------------------------------------------------------------------------

    def due_by_messages(self) -> bool:
        return len(self.ctx.conversation.history.entries) > self.ctx.settings.context.compact_message_threshold

    def due(self, parts: RequestParts | None = None) -> str | None:
        """Why auto-compaction should run now, or None."""
        settings = self.ctx.settings.context
        if self.due_by_messages():
            return f"more than {settings.compact_message_threshold} messages"
        if self.measure(parts, cap=self.ctx.compact_threshold).tokens > self.ctx.compact_threshold:
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
        await self.run(parts, reason=reason, one_request=True)

    async def recover_from_overflow(self, parts: RequestParts) -> bool:
        """After a provider context-length error: compact once if that can help (in chunks: the live
        prefix is what the provider just refused)."""
        if self.paused or self._plan() is None:
            return False
        result = await self.run(
            parts, reason="the provider said the context is too long", live=False, one_request=True
        )
        return result.ok

    # --- doing it -------------------------------------------------------------------------------

    async def run(
        self,
        parts: RequestParts,
        *,
        reason: str,
        instructions: str | None = None,
        live: bool = True,
        one_request: bool = False,
    ) -> CompactionFinished:
        """Compact now. ``one_request`` (automatic compaction): make at most one summary request, folding
        only the oldest part that fits one when the whole would need several — the rest is folded on
        later calls, and snip keeps each request in the window meanwhile. A huge session never makes the
        user wait for dozens of summary calls before their turn."""
        ctx = self.ctx
        plan = self._plan()
        if plan is None:
            event = CompactionFinished(False, 0, 0, 0, 0, NOTHING_TO_COMPACT)
            ctx.bus.emit(event)
            return event
        previous_state = ctx.bus.state
        ctx.bus.set_state(LoopState.COMPACT)
        try:
            return await self._compact(parts, plan, reason, instructions, live, one_request)
        finally:
            ctx.bus.set_state(previous_state)

    async def _compact(
        self,
        parts: RequestParts,
        plan: CompactionPlan,
        reason: str,
        instructions: str | None,
        live: bool,
        one_request: bool,
    ) -> CompactionFinished:
        ctx = self.ctx
        conversation = ctx.conversation
        tokens_before = self.measure(parts, cap=HISTORY_COUNT_CAP * self.ctx.budget.limit).tokens
        compactor = self._compactor()
        count = compactor.counter.count_text
        prep = self._prepare(plan, count)
        if one_request:
            trimmed = self._within_one_request(compactor, parts, plan, prep, instructions, live)
            if trimmed is None:
                return self._cannot_fold_in_one_request(tokens_before)
            if trimmed is not plan:
                plan, prep = trimmed, self._prepare(trimmed, count)
        try:
            result = await self._summarize(compactor, parts, plan, prep, instructions, live)
        except CompactionFailed as exc:
            self.state.failures += 1
            text = f"Compaction failed: {exc}. The history is unchanged."
            if self.paused:
                text += " Auto-compaction is paused after repeated failures; run /compact to try again."
            ctx.bus.emit(CompactionAttemptFailed(str(exc), self.state.failures))
            ctx.bus.emit(Notice(text, "warning"))
            event = CompactionFinished(False, 0, tokens_before, tokens_before, 0, text)
            ctx.bus.emit(event)
            return event
        outcome = finish_fold(
            prep,
            plan,
            result.summary,
            count=count,
            user_tokens=self._carried_tokens(ctx.settings.context.compact_user_tokens),
        )
        summary_tokens = count(outcome.summary)
        data = {
            "reason": reason,
            "instructions": instructions or "",
            "folded_messages": len(plan.fold),
            "chunks": result.chunks,
            "mode": result.mode,
            "tokens_replaced": result.tokens_replaced,
            "summary_tokens": summary_tokens,
            "prose_tokens": result.summary_tokens,
            **outcome.record,
        }
        record_id = conversation.session.append_compaction(outcome.summary, plan.folded_through, **data)
        conversation.fold(outcome.summary, plan.keep, record_id, data, folded=len(plan.fold))
        self.state.failures = 0
        self.state.compacted_through = plan.keep[-1].id if plan.keep else plan.folded_through
        self.state.warned_fixed_too_big = False
        tokens_after = self.measure(parts, cap=HISTORY_COUNT_CAP * self.ctx.budget.limit).tokens
        parts_note = f", {result.chunks} parts" if result.chunks > 1 else ""
        text = (
            f"Compacted {len(plan.fold)} messages into a {summary_tokens:,}-token summary "
            f"({tokens_before:,} → {tokens_after:,} tokens{parts_note}); "
            "`/compact undo` or `catbuddy compact --undo` brings them back."
        )
        event = CompactionFinished(
            True, len(plan.fold), tokens_before, tokens_after, summary_tokens, text, outcome.summary, record_id
        )
        ctx.bus.emit(event)
        return event

    async def _summarize(
        self,
        compactor: Compactor,
        parts: RequestParts,
        plan: CompactionPlan,
        prep: FoldPrep,
        instructions: str | None,
        live: bool,
    ) -> CompactionResult:
        """The model's prose: on the live prefix when it fits and the compact model is the chat model,
        otherwise (or when the provider refuses the live request as too long) in chunks."""
        folded = [entry.message for entry in plan.fold]
        replaced = compactor.replaced_tokens(prep.previous_summary, folded)
        request = self._live_request(compactor, parts, plan, prep, instructions, replaced) if live else None
        if request is not None:
            try:
                return await compactor.compact_live(request, parts.tools, replaced)
            except CompactionFailed as exc:
                if not isinstance(exc.__cause__, ContextLengthExceeded):
                    raise
        return await compactor.compact(
            prep.previous_prose,
            folded,
            instructions,
            ledger=prep.ledger_text,
            replaced=replaced,
            target=self._prose_target(compactor, replaced),
        )

    def _prepare(self, plan: CompactionPlan, count: Callable[[str], int]) -> FoldPrep:
        return prepare_fold(
            self.ctx.conversation.history,
            plan,
            work_root=self.ctx.workspace.work_root,
            count=count,
            ledger_tokens=self._carried_tokens(self.ctx.settings.context.compact_ledger_tokens),
        )

    def _within_one_request(
        self,
        compactor: Compactor,
        parts: RequestParts,
        plan: CompactionPlan,
        prep: FoldPrep,
        instructions: str | None,
        live: bool,
    ) -> CompactionPlan | None:
        """``plan`` if one summary request can fold it (on the live prefix, or one chunk); else the plan
        for the oldest part one chunk can carry, cut before a user message; None if there is no such cut."""
        folded = [entry.message for entry in plan.fold]
        if live:
            replaced = compactor.replaced_tokens(prep.previous_summary, folded)
            if self._live_request(compactor, parts, plan, prep, instructions, replaced) is not None:
                return plan
        previous = compactor.counter.count_text(prep.previous_prose) if prep.previous_prose else 0
        budget = compactor.chunk_budget(instructions, previous, prep.ledger_text)
        fits = compactor.first_chunk_size(folded, budget)
        if fits >= len(folded):
            return plan
        cut = next((i for i in range(fits, 0, -1) if plan.fold[i].message.get("role") == "user"), 0)
        if cut <= 0:
            return None
        return CompactionPlan(fold=plan.fold[:cut], keep=plan.fold[cut:] + plan.keep)

    def _cannot_fold_in_one_request(self, tokens: int) -> CompactionFinished:
        """No user message to cut at within one request's worth: leave the history to snip."""
        entries = self.ctx.conversation.history.entries
        self.state.compacted_through = entries[-1].id if entries else None  # not again before a new message
        text = (
            "Not compacting now: the oldest part of the history has no user message within what one summary "
            "request can carry; older messages are left out of requests (snipped) instead. /compact folds "
            "it all, in several requests."
        )
        self.ctx.bus.emit(Notice(text, "warning"))
        event = CompactionFinished(False, 0, tokens, tokens, 0, text)
        self.ctx.bus.emit(event)
        return event

    def _live_request(
        self,
        compactor: Compactor,
        parts: RequestParts,
        plan: CompactionPlan,
        prep: FoldPrep,
        instructions: str | None,
        replaced: int,
    ) -> list[dict[str, Any]] | None:
        """The summary request on the live prefix, or None when it cannot be: another compact model,
        or a history that does not fit whole (governance would snip or cut it, or the request and the
        summary's reply would not fit the window)."""
        ctx = self.ctx
        if self._compact_model() != ctx.model:
            return None
        try:
            governed = govern_request(
                prompt=parts.prompt,
                tools=parts.tools,
                history=ctx.conversation.history,
                counter=ctx.counter,
                budget=ctx.budget,
                context=ctx.settings.context,
                calibration=ctx.calibration_factor,
                compactable=parts.compactable,
            )
        except ContextOverflowError:
            return None
        if governed.report.messages_snipped or governed.report.results_truncated:
            return None
        request = compactor.live_request(
            governed.messages,
            instructions,
            ledger=prep.ledger_text,
            kept=[entry.message for entry in plan.keep],
            target=self._prose_target(compactor, replaced),
        )
        return request if compactor.live_fits(governed.size.tokens, request) else None

    def _prose_target(self, compactor: Compactor, replaced: int) -> int:
        return min(compactor.target_tokens(replaced), max(MIN_CARRIED_TOKENS, int(self.ctx.budget.limit * PROSE_BUDGET_SHARE)))

    def _carried_tokens(self, configured: int) -> int:
        share = max(MIN_CARRIED_TOKENS, int(self.ctx.budget.limit * CARRIED_BUDGET_SHARE))
        return min(configured, share)

    def _compact_model(self) -> str:
        return self.ctx.settings.compact_model or self.ctx.model

    def _compactor(self) -> Compactor:
        ctx = self.ctx
        model = self._compact_model()
        spec = ctx.settings.model_spec(model)

        async def summarize(messages: list[dict[str, Any]], max_tokens: int, **options: Any) -> str:
            provider = await ctx.provider.get()
            response = await provider.complete(model=model, messages=messages, max_tokens=max_tokens, **options)
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

    # --- undoing it -----------------------------------------------------------------------------

    async def undo(self) -> CompactionUndone:
        """Void the compaction in force with a ``compaction_undo`` record and rebuild the working
        history from the file, as it was before that compaction (the raw lines never left it)."""
        ctx = self.ctx
        conversation = ctx.conversation
        voided = conversation.history.summary_id
        if voided is None:
            event = CompactionUndone(False, NOTHING_TO_UNDO)
            ctx.bus.emit(event)
            return event
        conversation.session.append_compaction_undo(voided)
        history = await asyncio.to_thread(conversation.reload_history)
        self.state.failures = 0
        self.state.compacted_through = history.entries[-1].id if history.entries else None
        self.state.warned_fixed_too_big = False
        text = describe_undo(voided, history)
        event = CompactionUndone(True, text, voided, history.summary_id or "", len(history.entries))
        ctx.bus.emit(event)
        return event


def describe_undo(voided: str, history: WorkingHistory) -> str:
    """What an undo did, in the words the TUI and the CLI both use."""
    now = f"compaction {history.summary_id}'s summary and " if history.summary_id else ""
    further = (
        "/compact undo again walks back further."
        if history.summary_id
        else "No compaction is left in force."
    )
    return f"Undid compaction {voided}: the working history is back to {now}{len(history.entries)} messages. {further}"
