"""The COMPACT state's work: when to compact, doing it, and never looping (DESIGN §5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catbuddy.agent.events import CompactionFinished, LoopState, Notice
from catbuddy.context.compactor import CompactionFailed, Compactor, plan_compaction
from catbuddy.context.tokens import counter_for
from catbuddy.session.history import summary_message

if TYPE_CHECKING:
    from catbuddy.agent.loop import AgentLoop


class CompactionManager:
    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop
        self.failures = 0  # failures in a row; at the limit auto-compaction pauses until /compact
        self._compacted_since_message = False
        self._warned_fixed_too_big = False

    @property
    def paused(self) -> bool:
        return self.failures >= self.loop.settings.context.max_compact_failures

    @property
    def token_threshold(self) -> int:
        return int(self.loop.budget.limit * self.loop.settings.context.compact_token_ratio)

    def note_new_message(self) -> None:
        self._compacted_since_message = False

    # --- triggers -------------------------------------------------------------------------------

    def fixed_tokens(self) -> int:
        loop = self.loop
        prompt = loop.builder.build(loop.channel)
        tokens = loop.counter.count_message({"role": "system", "content": prompt.text})
        tokens += loop.counter.count_tools(loop.registry.schemas()) + 3
        if loop.history.summary:
            tokens += loop.counter.count_message(summary_message(loop.history.summary))
        return int(tokens * loop.calibration_factor)

    def context_tokens(self) -> int:
        loop = self.loop
        history = sum(loop.counter.count_message(m) for m in loop.history.messages)
        return self.fixed_tokens() + int(history * loop.calibration_factor)

    def due(self) -> str | None:
        """Why auto-compaction should run now, or None."""
        settings = self.loop.settings.context
        if len(self.loop.history.entries) > settings.compact_message_threshold:
            return f"more than {settings.compact_message_threshold} messages"
        if self.context_tokens() > self.token_threshold:
            return f"context above {settings.compact_token_ratio:.0%} of the budget"
        return None

    async def maybe_compact(self) -> None:
        loop = self.loop
        if not loop.settings.context.auto_compact or self.paused:
            return
        reason = self.due()
        if reason is None:
            return
        fixed = self.fixed_tokens()
        if self._compacted_since_message or fixed > self.token_threshold:
            # Compacting again cannot help: what is too big is not the history.
            if fixed > self.token_threshold and not self._warned_fixed_too_big:
                self._warned_fixed_too_big = True
                loop.emit(
                    Notice(
                        f"Not compacting: the fixed part of the prompt (system prompt, tool schemas, summary) is "
                        f"{fixed:,} tokens, above the compaction threshold of {self.token_threshold:,}. "
                        "Trim AGENTS.md/skills/MCP servers or use a model with a larger window.",
                        "warning",
                    )
                )
            return
        if plan_compaction(loop.history.entries, loop.settings.context.compact_keep_recent) is None:
            return
        await self.run(reason=reason)

    async def recover_from_overflow(self) -> bool:
        """After a provider context-length error: compact once if that can help."""
        loop = self.loop
        if (
            self.paused
            or plan_compaction(loop.history.entries, loop.settings.context.compact_keep_recent) is None
        ):
            return False
        result = await self.run(reason="the provider said the context is too long")
        return result.ok

    # --- doing it -------------------------------------------------------------------------------

    async def run(self, *, reason: str, instructions: str | None = None) -> CompactionFinished:
        loop = self.loop
        keep_recent = loop.settings.context.compact_keep_recent
        plan = plan_compaction(loop.history.entries, keep_recent)
        if plan is None:
            event = CompactionFinished(
                False, 0, 0, 0, 0, "Nothing to compact yet: the history is already short."
            )
            loop.emit(event)
            return event
        previous_state = loop.state
        loop.set_state(LoopState.COMPACT)
        tokens_before = self.context_tokens()
        try:
            result = await self._compactor().compact(
                loop.history.summary, [entry.message for entry in plan.fold], instructions
            )
        except CompactionFailed as exc:
            self.failures += 1
            text = f"Compaction failed: {exc}. The history is unchanged."
            if self.paused:
                text += " Auto-compaction is paused after repeated failures; run /compact to try again."
            loop.record_event("compaction_failed", reason=str(exc), failures=self.failures)
            loop.emit(Notice(text, "warning"))
            event = CompactionFinished(False, 0, tokens_before, tokens_before, 0, text)
            loop.emit(event)
            loop.set_state(previous_state)
            return event
        loop.session.append_compaction(
            result.summary,
            plan.folded_through,
            reason=reason,
            instructions=instructions or "",
            folded_messages=len(plan.fold),
            chunks=result.chunks,
            tokens_replaced=result.tokens_replaced,
            summary_tokens=result.summary_tokens,
        )
        loop.history.summary = result.summary
        loop.history.entries = plan.keep
        self.failures = 0
        self._compacted_since_message = True
        self._warned_fixed_too_big = False
        tokens_after = self.context_tokens()
        text = (
            f"Compacted {len(plan.fold)} messages into a {result.summary_tokens:,}-token summary "
            f"({tokens_before:,} → {tokens_after:,} tokens{', ' + str(result.chunks) + ' parts' if result.chunks > 1 else ''})."
        )
        event = CompactionFinished(
            True, len(plan.fold), tokens_before, tokens_after, result.summary_tokens, text
        )
        loop.emit(event)
        loop.set_state(previous_state)
        return event

    def _compactor(self) -> Compactor:
        loop = self.loop
        model = loop.settings.compact_model or loop.model
        spec = loop.settings.model_spec(model)

        async def summarize(messages: list[dict[str, Any]], max_tokens: int) -> str:
            provider = await loop.get_provider()
            response = await provider.complete(model=model, messages=messages, max_tokens=max_tokens)
            return str(response.message.get("content") or "")

        # The summary request goes to ``model``: count with its tokenizer and hold it to its own
        # calibration, so it fits that model's window however its tokenizer differs from ours.
        return Compactor(
            counter_for(loop.settings.encoding_for(model)),
            context_window=min(spec.context_window, loop.budget.context_window),
            max_output_tokens=spec.max_output_tokens,
            safety_margin=loop.settings.context.safety_margin,
            summarize=summarize,
            calibration=loop.calibration.factor(model),
        )
