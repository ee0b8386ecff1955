"""`catbuddy run`: one prompt, no questions asked, for scripts and CI.

Text mode streams the reply to stdout and reports tool calls and notices on stderr; ``--json``
prints one result object at the end; ``--stream-json`` prints every event as a JSON line.
Exit codes: 0 done, 1 the run failed, 2 bad usage.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from catbuddy.agent.events import (
    CompactionFinished,
    ErrorOccurred,
    Event,
    GovernanceReported,
    Notice,
    PlanUpdated,
    ReasoningDelta,
    Retrying,
    SubagentFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnEnded,
    TurnEndReason,
    UsageReported,
)
from catbuddy.cli_commands.stdin_approvals import StdinApprovals
from catbuddy.config import Settings
from catbuddy.stop_signals import cancel_current_task, stop_on_signals
from catbuddy.tool_meta import ToolMeta
from catbuddy.workspace import Workspace

EXIT_OK, EXIT_FAILED = 0, 1
RESULT_PREVIEW_CHARS = 160


@dataclass
class RunSummary:
    session_id: str = ""
    reason: str = ""
    text: str = ""
    iterations: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    reasoning: list[str] = field(default_factory=list)  # the turn's reasoning, apart from the result
    errors: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    plan: list[dict[str, str]] | None = None  # the plan as the run left it (update_plan), if any

    @property
    def ok(self) -> bool:
        return self.reason == TurnEndReason.DONE.value

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "ok": self.ok,
            "reason": self.reason,
            "result": self.text,
            "reasoning": "".join(self.reasoning),
            "iterations": self.iterations,
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens,
                "reasoning_tokens": self.reasoning_tokens,
            },
            "errors": self.errors,
            "notices": self.notices,
            **({"plan": self.plan} if self.plan is not None else {}),
        }


class HeadlessPrinter:
    """Turns the event stream into output for one of the three formats."""

    def __init__(self, fmt: str, out: TextIO, err: TextIO) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.summary = RunSummary()
        self._line_open = False
        self.closed = False  # the reader went away (`catbuddy run … | head`): stop writing, quietly

    def __call__(self, event: Event) -> None:
        # Errors, notices and retries arrive scrubbed of secrets (agent/bus.py): a provider error can
        # quote a base URL with its password.
        self._collect(event)
        if self.closed:
            return
        try:
            if self.fmt == "stream-json":
                self.out.write(json.dumps(event.to_json(), ensure_ascii=False, default=str) + "\n")
                self.out.flush()
            elif self.fmt == "text":
                self._text(event)
        except BrokenPipeError:
            self.closed = True
            _silence(self.out)

    def _collect(self, event: Event) -> None:
        summary = self.summary
        if isinstance(event, ToolCallFinished):
            summary.tool_calls += 1
            summary.tool_errors += int(event.is_error)
        elif isinstance(event, UsageReported):
            summary.prompt_tokens += event.prompt_tokens
            summary.completion_tokens += event.completion_tokens
            summary.cached_tokens += event.cached_tokens
            summary.cache_write_tokens += event.cache_write_tokens
            summary.reasoning_tokens += event.reasoning_tokens
        elif isinstance(event, ReasoningDelta):
            summary.reasoning.append(event.text)
        elif isinstance(event, PlanUpdated):
            summary.plan = list(event.steps)
        elif isinstance(event, SubagentFinished):  # a subagent's usage rolls up into the run's
            summary.prompt_tokens += int(event.usage.get("prompt_tokens", 0))
            summary.completion_tokens += int(event.usage.get("completion_tokens", 0))
            summary.cached_tokens += int(event.usage.get("cached_tokens", 0))
            summary.cache_write_tokens += int(event.usage.get("cache_write_tokens", 0))
            summary.reasoning_tokens += int(event.usage.get("reasoning_tokens", 0))
        elif isinstance(event, ErrorOccurred):
            summary.errors.append(event.message + (f" ({event.hint})" if event.hint else ""))
        elif isinstance(event, Notice | CompactionFinished):
            summary.notices.append(event.text if isinstance(event, Notice) else event.message)
        elif isinstance(event, TurnEnded):
            summary.reason = event.reason.value
            summary.text = event.text
            summary.iterations = event.iterations

    def _text(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta):  # thinking goes to stderr: stdout stays the answer
            self.err.write(event.text)
            self.err.flush()
            return
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._line_open = not event.text.endswith("\n")
            return
        if self._line_open and isinstance(event, ToolCallStarted | TurnEnded):
            self.out.write("\n")
            self.out.flush()
            self._line_open = False
        if isinstance(event, ToolCallStarted):
            self._err(f"→ {event.name} {event.summary}".rstrip())
        elif isinstance(event, ToolCallFinished):
            first = (
                event.result.strip().splitlines()[0][:RESULT_PREVIEW_CHARS] if event.result.strip() else ""
            )
            outcome = ToolMeta.from_json(event.meta) if event.meta else None
            mark = "✗" if event.is_error else "✓"
            said = f" {outcome.summary}:" if outcome is not None and outcome.summary else ""
            self._err(f"  {mark} {event.name} ({event.duration:.1f}s){said} {first}")
        elif isinstance(event, ErrorOccurred):
            self._err(f"error: {event.message}" + (f"\n  hint: {event.hint}" if event.hint else ""))
        elif isinstance(event, Notice):
            self._err(f"note: {event.text}")
        elif isinstance(event, Retrying):
            self._err(f"retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}")
        elif isinstance(event, GovernanceReported) and event.summary:
            self._err(f"context: {event.summary}")
        elif isinstance(event, CompactionFinished):
            self._err(f"compaction: {event.message}")

    def _err(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()


async def run_headless(
    workspace: Workspace,
    settings: Settings,
    prompt: str,
    *,
    fmt: str = "text",
    resume: str | None = None,
    continue_latest: bool = False,
    approvals_from_stdin: bool = False,
    dream: bool = False,
    plan_mode: bool = False,
    images: list[Path] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    from catbuddy.agent.loop import AgentLoop

    # Looked up per call: a default bound at import time would keep writing to a replaced stream.
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    printer = HeadlessPrinter(fmt, out, err)
    loop = AgentLoop(
        workspace,
        settings,
        channel="headless",
        resume=resume,
        continue_latest=continue_latest,
        interactive=approvals_from_stdin,
    )
    loop.add_listener(printer)
    loop.pending_images = list(images or [])  # `--image`: attached to the prompt's message
    reader: asyncio.Task[None] | None = None
    if approvals_from_stdin:
        answers = StdinApprovals(loop.answer_approval, loop.emit, sys.stdin)
        loop.add_listener(answers)
        reader = asyncio.get_running_loop().create_task(answers.read())
    # SIGTERM/SIGHUP stop the run as Ctrl+C does: the turn is cancelled (stop record, children killed).
    with stop_on_signals(cancel_current_task()) as caught:
        try:
            await loop.start()
            printer.summary.session_id = loop.session_id
            loop.set_plan_mode(plan_mode)  # --plan: reading tools only, the model ends with a plan
            await loop.run_turn(prompt)
            if dream:  # headless never dreams unless asked (memory.dream governs the app's idle Dream)
                await loop.dream(manual=False, include_this_session=True)
        except asyncio.CancelledError:
            if caught.signum is None:
                raise
            _uncancel()
        finally:
            if reader is not None:
                reader.cancel()
            answered = _has_an_answer(loop)
            await loop.aclose()
    if caught.signum is not None:
        name = signal.Signals(caught.signum).name
        err.write(f"catbuddy: stopped by {name}; session {loop.session_id} is saved.\n")
        return caught.exit_code
    summary = printer.summary
    if fmt == "json" and not printer.closed:
        try:
            out.write(json.dumps(summary.to_json(), ensure_ascii=False, indent=2) + "\n")
            out.flush()
        except BrokenPipeError:
            _silence(out)
    elif fmt == "text" and answered:
        err.write(
            f"session {summary.session_id} — continue with: catbuddy run --resume {summary.session_id} PROMPT\n"
        )
    elif fmt == "text":  # nothing but the prompt that failed: nothing worth resuming
        err.write(f"session {summary.session_id} holds only the prompt; once fixed, run it again.\n")
    return EXIT_OK if summary.ok else EXIT_FAILED


def _has_an_answer(loop: Any) -> bool:
    """Whether the session holds anything from the model (a run that failed at once holds only the prompt)."""
    try:
        return any(entry.message.get("role") == "assistant" for entry in loop.transcript())
    except Exception:  # a session that could not even be read: nothing to resume either
        return False


def _silence(stream: TextIO) -> None:
    """Point a closed pipe's file descriptor at /dev/null, so the flush at exit raises nothing either."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's StringIO)
        pass


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def run_headless_sync(*args: Any, **kwargs: Any) -> int:
    return asyncio.run(run_headless(*args, **kwargs))
