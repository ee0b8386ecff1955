"""One turn: build context → govern → call the model → run the tool calls → repeat (DESIGN §4, §7).

The runner works on the loop's state (session, working history) and reports everything through
the loop's event stream. Stopping cancels the task that runs the turn; the runner then keeps the
partial reply and answers every unanswered call with a "cancelled" result, so the session on disk
is always a valid conversation.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catbuddy.agent.approval import HEADLESS_REFUSAL, preview_for, refusal_text
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalRequested,
    AssistantMessage,
    ContextStatus,
    ErrorOccurred,
    GovernanceReported,
    Notice,
    Retrying,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEndReason,
    UsageReported,
)
from catbuddy.context.governor import ContextOverflowError, FixedPart, GovernedContext, govern_context
from catbuddy.tools.base import ToolResult
from catbuddy.tools.registry import run_tool

if TYPE_CHECKING:
    from catbuddy.agent.loop import AgentLoop

CANCELLED_RESULT = "[Cancelled: the user stopped this call before it finished]"
TIGHTEN_FACTOR = 1.15  # calibration step after a context-length error we could not explain
_CONTEXT_NUMBERS = re.compile(r"maximum context length is (\d+) tokens.*?(\d+) tokens", re.S)


@dataclass
class TurnOutcome:
    reason: TurnEndReason
    text: str = ""
    iterations: int = 0


@dataclass
class _CallState:
    """What a model call has produced so far, so a stop can keep it."""

    text: list[str] = field(default_factory=list)


class TurnRunner:
    def __init__(self, loop: AgentLoop) -> None:
        self.loop = loop
        self._pending_calls: list[dict[str, Any]] = []
        self._answered: set[str] = set()
        self._call_state: _CallState | None = None

    # --- the turn ---------------------------------------------------------------------------------

    async def run(self, user_text: str) -> TurnOutcome:
        loop = self.loop
        loop.append_message(loop.builder.user_message(user_text, loop.channel))
        last_text = ""
        max_iterations = loop.settings.max_iterations
        for iteration in range(1, max_iterations + 1):
            await loop.compaction.maybe_compact()
            try:
                governed = self.govern()
            except ContextOverflowError as exc:
                loop.emit(
                    ErrorOccurred(
                        str(exc),
                        "Raise context_window for this model, remove skills or MCP servers, or /compact.",
                    )
                )
                loop.record_event("error", message=str(exc))
                return TurnOutcome(TurnEndReason.ERROR, last_text, iteration)
            message = await self.call_model(governed)
            if message is None:
                return TurnOutcome(TurnEndReason.ERROR, last_text, iteration)
            last_text = message.get("content") or last_text
            calls = message.get("tool_calls") or []
            if not calls:
                return TurnOutcome(TurnEndReason.DONE, last_text, iteration)
            await self.run_tool_calls(calls)
        notice = (
            f"Stopped after {max_iterations} model calls in one turn (max_iterations). "
            "Send a message to let catbuddy continue."
        )
        loop.emit(Notice(notice, "warning"))
        loop.record_event("iteration_cap", limit=max_iterations)
        return TurnOutcome(TurnEndReason.ITERATION_CAP, last_text, max_iterations)

    def govern(self) -> GovernedContext:
        loop = self.loop
        prompt = loop.builder.build(loop.channel)
        tools = loop.registry.schemas()
        counter = loop.counter
        layer_tokens = prompt.layer_tokens(counter.encoding_name, counter.count_text)
        fixed = FixedPart(prompt.text, tools, loop.history.summary, layer_tokens)
        governed = govern_context(
            loop.history.messages,
            fixed,
            loop.budget,
            loop.counter,
            keep_recent_results=loop.settings.context.keep_recent_results,
            calibration=loop.calibration_factor,
        )
        report = governed.report
        if report.changed:
            loop.emit(GovernanceReported(report.to_dict(), report.summary()))
            loop.record_event("governance", **report.to_dict())
        loop.last_request_tokens = report.tokens_after
        loop.emit(
            ContextStatus(
                used=int(report.tokens_after * loop.calibration_factor),
                budget=loop.budget.limit,
                compact_at=loop.compaction.token_threshold,
                model=loop.model,
            )
        )
        return governed

    # --- the model call -------------------------------------------------------------------------

    async def call_model(self, governed: GovernedContext) -> dict[str, Any] | None:
        """Stream one reply. On a context-length error: compact (or snip tighter) and retry once."""
        from catbuddy.llm.errors import ContextLengthExceeded, LLMError

        loop = self.loop
        retried = False
        while True:
            try:
                return await self._stream(governed)
            except ContextLengthExceeded as exc:
                if retried:
                    loop.emit(
                        ErrorOccurred(
                            f"The request is still too large for {loop.model}: {exc.message}", exc.hint
                        )
                    )
                    loop.record_event("error", message=exc.message, code="context_length_exceeded")
                    return None
                retried = True
                loop.record_event("context_length_exceeded", message=exc.message)
                if not await loop.compaction.recover_from_overflow():
                    self._tighten_calibration(exc.message, governed)
                try:
                    governed = self.govern()
                except ContextOverflowError as overflow:
                    loop.emit(ErrorOccurred(str(overflow)))
                    return None
            except LLMError as exc:
                self._keep_partial_text()  # the user saw it stream; the session must show it too
                loop.emit(ErrorOccurred(exc.message, exc.hint))
                loop.record_event("error", message=exc.message)
                return None

    def _tighten_calibration(self, message: str, governed: GovernedContext) -> None:
        loop = self.loop
        counted = governed.report.tokens_after
        match = _CONTEXT_NUMBERS.search(message or "")
        ratio = loop.calibration_factor * TIGHTEN_FACTOR
        if match and counted:
            ratio = max(ratio, int(match.group(2)) / counted)
        new = loop.calibration.raise_to(loop.model, ratio)
        loop.emit(
            Notice(
                f"The provider counts more tokens than expected; calibration is now ×{new:.2f}.", "warning"
            )
        )

    async def _stream(self, governed: GovernedContext) -> dict[str, Any]:
        from catbuddy.llm.provider import Completed, TextChunk

        loop = self.loop
        provider = await loop.get_provider()
        state = self._call_state = _CallState()

        def on_retry(attempt: int, delay: float, reason: str) -> None:
            loop.emit(Retrying(attempt, delay, reason))

        response = None
        async for piece in provider.stream_chat(
            model=loop.model,
            messages=governed.messages,
            tools=loop.registry.schemas() or None,
            on_retry=on_retry,
        ):
            if isinstance(piece, TextChunk):
                state.text.append(piece.text)
                loop.emit(TextDelta(piece.text))
            elif isinstance(piece, Completed):
                response = piece.response
        self._call_state = None
        if response is None:
            from catbuddy.llm.errors import ProviderError

            raise ProviderError("the stream ended without a final response", "Try again; check the endpoint.")
        message = dict(response.message)
        message.setdefault("content", None)
        loop.append_message(message)
        loop.emit(AssistantMessage(message))
        if response.usage is not None and response.usage.prompt_tokens:
            counted = governed.report.tokens_after
            ratio = loop.calibration.observe(loop.model, response.usage.prompt_tokens, counted)
            loop.emit(
                UsageReported(
                    response.usage.prompt_tokens, response.usage.completion_tokens or 0, counted, ratio
                )
            )
            loop.record_event(
                "usage",
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                counted_prompt_tokens=counted,
            )
        return message

    # --- tools ----------------------------------------------------------------------------------

    async def run_tool_calls(self, calls: list[dict[str, Any]]) -> None:
        """Approve, then run: consecutive read-only calls run together; results stay in call order."""
        self._pending_calls = list(calls)
        self._answered = set()
        batch: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for call in calls:
            args, error = self._parse_arguments(call)
            tool = self.loop.registry.get(call["function"]["name"])
            self.loop.emit(
                ToolCallStarted(
                    call["id"],
                    call["function"]["name"],
                    call["function"].get("arguments") or "",
                    tool.summary(args) if tool and args else "",
                )
            )
            if error is not None or tool is None:
                await self._flush(batch)
                batch = []
                text = error or self._unknown_tool(call["function"]["name"])
                self._finish(call, ToolResult(text, is_error=True), 0.0)
                continue
            refusal = await self._approve(call, tool, args)
            if refusal is not None:
                await self._flush(batch)
                batch = []
                self._finish(call, ToolResult(refusal, is_error=True), 0.0)
                continue
            if tool.read_only:
                batch.append((call, args))
                continue
            await self._flush(batch)
            batch = []
            await self._flush([(call, args)])
        await self._flush(batch)
        self._pending_calls = []

    def _parse_arguments(self, call: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        raw = call["function"].get("arguments") or "{}"
        try:
            args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except (json.JSONDecodeError, TypeError, ValueError) as exc:
            return {}, f"Error: the arguments are not valid JSON ({exc}). Send a JSON object."
        if not isinstance(args, dict):
            return {}, "Error: the arguments must be a JSON object."
        return args, None

    def _unknown_tool(self, name: str) -> str:
        available = ", ".join(self.loop.registry.names())
        return f"Error: there is no tool named {name!r}. Available tools: {available}."

    async def _approve(self, call: dict[str, Any], tool: Any, args: dict[str, Any]) -> str | None:
        """None when the call may run; otherwise the text the model gets instead of a result."""
        loop = self.loop
        decision = loop.policy.decide(tool, args)
        if decision.action == "allow":
            return None
        if decision.action == "deny":
            loop.record_event(
                "approval",
                tool=tool.name,
                call_id=call["id"],
                decision="denied_by_rule",
                reason=decision.reason,
            )
            return f"Refused by catbuddy's safety rules: {decision.reason}"
        if not loop.interactive:
            loop.record_event("approval", tool=tool.name, call_id=call["id"], decision="refused_headless")
            return HEADLESS_REFUSAL.format(tool=tool.name, mode=loop.policy.mode)
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        loop.emit(
            ApprovalRequested(
                call["id"],
                tool.name,
                args,
                tool.summary(args),
                preview_for(tool.name, args, loop.tool_context),
                decision.suggested_pattern or "",
                _future=future,
            )
        )
        answer = await future
        loop.record_event(
            "approval", tool=tool.name, call_id=call["id"], decision=answer.choice.value, note=answer.note
        )
        if answer.choice is ApprovalChoice.ALLOW_SESSION:
            loop.policy.remember(answer.pattern or decision.suggested_pattern or tool.name)
        return None if answer.allowed else refusal_text(answer)

    async def _flush(self, batch: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
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

    async def _run_one(self, call: dict[str, Any], args: dict[str, Any]) -> tuple[ToolResult, float]:
        tool = self.loop.registry.get(call["function"]["name"])
        assert tool is not None
        started = time.monotonic()
        result = await run_tool(tool, args, self.loop.tool_context)
        return result, time.monotonic() - started

    def _finish(self, call: dict[str, Any], result: ToolResult, duration: float) -> None:
        if call["id"] in self._answered:
            return
        self._answered.add(call["id"])
        self.loop.append_message({"role": "tool", "tool_call_id": call["id"], "content": result.content})
        self.loop.emit(
            ToolCallFinished(
                call["id"],
                call["function"]["name"],
                result.content,
                result.is_error,
                duration,
                result.display,
            )
        )

    # --- stopping -------------------------------------------------------------------------------

    def keep_partial_work(self) -> None:
        """After a stop: keep the streamed text, answer every unanswered call as cancelled."""
        self._keep_partial_text()
        for call in self._pending_calls:
            self._finish(call, ToolResult(CANCELLED_RESULT, is_error=True), 0.0)
        self._pending_calls = []

    def _keep_partial_text(self) -> None:
        state, self._call_state = self._call_state, None
        if state is not None and state.text:
            message = {"role": "assistant", "content": "".join(state.text)}
            self.loop.append_message(message)
            self.loop.emit(AssistantMessage(message))
