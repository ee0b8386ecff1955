"""AgentLoop: the state machine IDLE → RUN ⇄ COMPACT → IDLE (+ STOPPING) that front ends drive.

It owns the conversation (the session on disk and its working history), the tools and the provider,
runs one turn at a time, queues input that arrives meanwhile, and reports everything as typed events.
Front ends use it through the ``Agent`` protocol (``agent/api.py``); docs/architecture.md §5 draws the
state machine and the data flow of one turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import replace
from typing import Any

from catbuddy.agent.approval_broker import ApprovalBroker
from catbuddy.agent.bus import EventBus, Listener
from catbuddy.agent.compaction import CompactionManager, CompactionState
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalModeChanged,
    CompactionFinished,
    CompactionUndone,
    ContextStatus,
    DreamChoice,
    ErrorOccurred,
    Event,
    LoopState,
    ModelChanged,
    Notice,
    SessionOpened,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    TurnStopped,
)
from catbuddy.agent.memory_keeper import MemoryKeeper
from catbuddy.agent.runner import TurnOutcome, TurnRunner, context_status, govern
from catbuddy.agent.toolset import build_registry, refresh_external
from catbuddy.agent.turn_context import RequestParts, TurnContext
from catbuddy.config import Settings
from catbuddy.config_checks import EFFORTS
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.context.counting.calibration import CalibrationStore
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.report import ContextReport, budget_for, context_report
from catbuddy.errors import CatbuddyError, explain
from catbuddy.llm.lazy import LazyProvider, ProviderFactory, openai_provider
from catbuddy.memory.dream import DreamResult
from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.sandbox import describe as sandbox_description
from catbuddy.session.conversation import Conversation
from catbuddy.session.history import HistoryEntry
from catbuddy.session.store import Session, SessionInfo, SessionStore
from catbuddy.tools.base import ToolContext
from catbuddy.workspace import Workspace

log = logging.getLogger(__name__)

__all__ = ["AgentLoop", "ContextReport"]


class AgentLoop:
    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        *,
        channel: str = "tui",
        resume: str | None = None,
        continue_latest: bool = False,
        interactive: bool | None = None,
        provider_factory: ProviderFactory = openai_provider,
        background_dream: bool = False,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self._configured = settings  # what config.toml says (``/model NAME default`` goes back to it)
        self.channel = channel
        self.interactive = channel != "headless" if interactive is None else interactive
        self._resume = resume
        self._continue_latest = continue_latest
        self._model = settings.model_name
        self._secrets = settings.held_secrets()
        self.store = SessionStore(workspace.sessions_dir)
        self.builder = ContextBuilder(workspace, settings)
        self.calibration = CalibrationStore.in_home(workspace.home)
        self.policy = ApprovalPolicy(settings.approval, settings, workspace)
        self.mcp: Any = None
        self._mcp_failures_shown: set[str] = set()
        self._warned: set[str] = set()  # workspace warnings already shown
        self.registry = build_registry()
        self.tool_context = ToolContext(workspace, settings, sessions_dir=self.store.sessions_dir)
        self.provider = LazyProvider(settings, provider_factory)
        self.bus = EventBus(self._secrets)
        self.bus.set_recorder(self._record)
        self.approvals = ApprovalBroker()
        self.queued: list[str] = []
        self._conversation: Conversation | None = None
        self._compaction = CompactionState()
        self._turn_task: asyncio.Task[None] | None = None
        self._runner: TurnRunner | None = None
        self._turns = 0
        self._stop_requested = False
        self._last_outcome = TurnOutcome(TurnEndReason.DONE)
        # Memory entries and Dream (docs/architecture.md §13); ``background_dream`` is the TUI's idle Dream.
        self.memory = MemoryKeeper(
            workspace,
            settings,
            self.bus,
            self.provider,
            model=lambda: self._model,
            secrets=self._secrets,
            background=background_dream,
            interactive=self.interactive and channel == "tui",  # who can answer a DreamProposed
            channel=channel,
        )
        self.bus.add_listener(self.memory.on_event)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open (or create) the session and connect MCP servers (in the background in the app)."""
        if self._resume:
            self._open_session(self._resume)
        elif self._continue_latest:
            latest = self.store.latest(self.workspace.work_root)
            if latest is None:
                self._create_session()
                self.emit(Notice("No earlier session in this directory; started a new one."))
            else:
                self._open_session(latest.id)
        else:
            self._create_session()
        await self._announce_safety()
        self._show_workspace_warnings(self.builder.build(self.channel).warnings)
        self.memory.start()
        if self.settings.mcp_servers:
            await self._start_mcp()

    async def _announce_safety(self) -> None:
        """Once at start-up: an unavailable or switched-off sandbox, and project settings not trusted."""
        from catbuddy import sandbox

        notice = await asyncio.to_thread(sandbox.startup_notice, self.settings)  # probes bwrap once
        if notice:
            self.emit(Notice(notice, "warning"))
        trust = self.settings.project_trust
        if trust is not None and not trust.applied and self.channel == "tui":  # the CLI warned on stderr
            self.emit(Notice(trust.warning(), "warning"))

    async def _start_mcp(self) -> None:
        from catbuddy.mcp.client import McpManager

        self.mcp = McpManager(self.settings.mcp_servers, self.workspace.work_root)
        self.builder.add_runtime_source(self.mcp)
        self.mcp.on_change(self._mcp_changed)
        await self.mcp.start()
        if not self.interactive:
            # Nobody watches a headless run: give the servers their start-up time so the first
            # request already has their tools. The app connects them in the background instead.
            startup = max((s.startup_timeout for s in self.settings.mcp_servers.values()), default=0)
            await self.mcp.wait_ready(startup + 1)
        self._mcp_changed()

    def _mcp_changed(self) -> None:
        if self.mcp is not None:
            refresh_external(self.registry, self.mcp.tools())
            for status in self.mcp.statuses():
                if status.state == "failed" and status.name not in self._mcp_failures_shown:
                    self._mcp_failures_shown.add(status.name)
                    tail = f"\n{status.stderr_tail}" if status.stderr_tail else ""
                    self.emit(Notice(f"MCP server {status.name} failed: {status.error}{tail}", "warning"))

    async def warm_up(self) -> None:
        """Build the provider off the event loop now, so the first message does not wait for it."""
        await self.provider.warm()

    async def aclose(self) -> None:
        if self._turn_task is not None and not self._turn_task.done():
            await self.stop()
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.mcp.aclose()
            self.mcp = None
        await self.memory.aclose()
        await self.memory.session_ended(self._conversation)
        if self._conversation is not None:
            self._conversation.close()
        await self.provider.aclose()

    def _create_session(self) -> None:
        self._set_conversation(Conversation.create(self.store, self.workspace.work_root, self.model))

    def _open_session(self, session_id: str) -> None:
        conversation = Conversation.open(self.store, session_id)
        meta = conversation.session.meta
        if meta.model and self.settings.model is None:
            self._model = meta.model
        self._set_conversation(conversation)
        for problem in conversation.problems:
            self.emit(Notice(f"Session {conversation.id}: {problem}", "warning"))

    def _set_conversation(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._compaction = CompactionState()
        self.tool_context.session_id = conversation.id  # what `recall` searches
        self.emit(
            SessionOpened(conversation.id, conversation.resumed, self.model, str(conversation.session.path))
        )

    # --- events ---------------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self.bus.add_listener(listener)

    def remove_listener(self, listener: Listener) -> None:
        self.bus.remove_listener(listener)

    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def _record(self, event: Event) -> None:
        """The session keeps the event types marked as records (docs/architecture.md §6)."""
        if self._conversation is not None:
            self._conversation.record(event)

    # --- state ----------------------------------------------------------------------------------

    @property
    def state(self) -> LoopState:
        return self.bus.state

    @property
    def conversation(self) -> Conversation:
        if self._conversation is None:
            raise RuntimeError("the agent loop has not started: call `await loop.start()` first")
        return self._conversation

    @property
    def session(self) -> Session:
        return self.conversation.session

    @property
    def session_id(self) -> str:
        return self._conversation.id if self._conversation is not None else ""

    @property
    def model(self) -> str:
        return self._model

    def set_model(self, model: str) -> None:
        """The model for the next turn (a running turn finishes with its own). "NAME EFFORT" also sets
        the model's reasoning effort (low, medium, high, …; "default" goes back to the configured one)."""
        name, _, effort = model.strip().partition(" ")
        effort = effort.strip().lower()
        if not name:
            raise ValueError("a model name is needed, e.g. /model gpt-4o (or /model o4-mini high)")
        if effort and effort != "default" and effort not in EFFORTS:
            choices = ", ".join(e for e in EFFORTS if e)
            raise ValueError(f"unknown reasoning effort {effort!r}: one of {choices}, or default")
        if effort:
            options = dict(self.settings.model_options)
            configured = self._configured.options_for(name).reasoning_effort
            chosen = configured if effort == "default" else effort
            options[name] = replace(self.settings.options_for(name), reasoning_effort=chosen)
            self.settings = replace(self.settings, model_options=options)
        self._model = name
        self.emit(ModelChanged(name, self.settings.options_for(name).reasoning_effort))

    @property
    def approval_mode(self) -> str:
        return str(self.policy.mode)

    def set_approval_mode(self, mode: str) -> None:
        self.policy.mode = mode  # raises ValueError naming the modes
        self.emit(ApprovalModeChanged(mode))

    def answer_approval(
        self, call_id: str, choice: ApprovalChoice | str, note: str = "", pattern: str = ""
    ) -> bool:
        """Answer a pending ``ApprovalRequested``; False when nothing waits on ``call_id``."""
        decision = ApprovalDecision(ApprovalChoice(choice), note, pattern)
        return self.approvals.answer(call_id, decision)

    def transcript(self) -> list[HistoryEntry]:
        """Every message of the session, folded ones too, each with its stored meta (for display)."""
        return list(self.conversation.transcript)

    def list_sessions(self) -> list[SessionInfo]:
        return self.store.list()

    def turn_context(self) -> TurnContext:
        """The collaborators of one turn or one /compact, with the model and its budget fixed."""
        return TurnContext(
            settings=self.settings,
            workspace=self.workspace,
            model=self._model,
            channel=self.channel,
            interactive=self.interactive,
            conversation=self.conversation,
            builder=self.builder,
            registry=self.registry,
            counter=counter_for(self.settings.encoding_for(self._model)),
            budget=budget_for(self.settings, self._model),
            calibration=self.calibration,
            policy=self.policy,
            tools=self.tool_context,
            provider=self.provider,
            bus=self.bus,
            approvals=self.approvals,
            secrets=self._secrets,
        )

    def compaction(self) -> CompactionManager:
        """The compaction manager of the conversation now (its state lives as long as the conversation)."""
        return CompactionManager(self.turn_context(), self._compaction)

    def context_report(self) -> ContextReport:
        """`/context`: the request governance would make of the history now, measured."""
        ctx = self.turn_context()
        parts = RequestParts.build(ctx)
        governed = govern(ctx, parts)
        return context_report(
            settings=self.settings,
            model=ctx.model,
            prompt=parts.prompt,
            size=governed.size,
            history_messages=len(governed.history),
            tool_count=len(parts.tools),
            counter=ctx.counter,
            budget=ctx.budget,
            calibration_source=self.calibration.get(ctx.model).describe(),
            sandbox=sandbox_description(self.settings),
            folded_messages=ctx.conversation.history.folded,
            usage=ctx.conversation.usage,
        )

    def context_status(self) -> ContextStatus:
        """The status bar's figure for the history now: the same measure as `/context`."""
        ctx = self.turn_context()
        return context_status(ctx, govern(ctx, RequestParts.build(ctx)))

    # --- turns ----------------------------------------------------------------------------------

    def submit(self, text: str) -> None:
        """Start a turn now, or queue the input until the running turn ends."""
        if not text.strip():
            return
        if self._turn_task is not None and not self._turn_task.done():
            self.queued.append(text)
            return
        self._turn_task = asyncio.get_running_loop().create_task(self._turns_from(text))

    async def run_turn(self, text: str) -> TurnOutcome:
        """Run one turn to its end (used by `catbuddy run`); events flow to the listeners as usual."""
        self.submit(text)
        task = self._turn_task
        if task is not None:
            await task
        return self._last_outcome

    async def _turns_from(self, text: str) -> None:
        next_text: str | None = text
        while next_text is not None:
            await self._one_turn(next_text)
            next_text = self.queued.pop(0) if self.queued and not self._stop_requested else None
        self._stop_requested = False

    async def _one_turn(self, text: str) -> None:
        self._turns += 1
        self._stop_requested = False
        ctx = self.turn_context()
        runner = self._runner = TurnRunner(ctx, CompactionManager(ctx, self._compaction))
        self.bus.set_state(LoopState.RUN)
        self.emit(TurnStarted(self._turns, text))
        try:
            outcome = await runner.run(text)
        except asyncio.CancelledError:
            runner.keep_partial_work()
            self.emit(TurnStopped(self._turns))
            outcome = TurnOutcome(TurnEndReason.STOPPED)
            if not self._stop_requested:
                self._finish_turn(outcome)
                raise
        except Exception as exc:  # the loop must survive anything a turn throws
            outcome = self._turn_failed(ctx, exc)
        # A turn that ended with a plain answer ran nothing after its last call's prompt was built:
        # the status reuses it (the prompt is built once per model call, not again at the turn's end).
        self._finish_turn(outcome, runner.parts if outcome.reason is TurnEndReason.DONE else None)

    def _turn_failed(self, ctx: TurnContext, exc: Exception) -> TurnOutcome:
        """A known error (docs/architecture.md §14) says what happened and what to do; anything else is
        "Unexpected", with its traceback only at debug level (never on a user's stderr)."""
        message, hint = explain(exc)
        if isinstance(exc, CatbuddyError):
            log.info("turn failed: %r", exc)  # the front end shows it; the log file keeps it
        else:
            log.error("turn failed: %r", exc)
            log.debug("turn failed", exc_info=True)
            hint = "See the log; the session is saved and usable."
        try:
            self.emit(ErrorOccurred(message, hint))  # shown first, then recorded (agent/bus.py)
        except OSError as again:  # the error may be that the session cannot be written
            log.info("the error could not be recorded in the session either: %s", again)
        return TurnOutcome(TurnEndReason.ERROR)

    def _show_workspace_warnings(self, warnings: list[str]) -> None:
        """Workspace files the prompt had to skip (unreadable, not UTF-8): said once each."""
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                self.emit(Notice(warning, "warning"))

    def _finish_turn(self, outcome: TurnOutcome, parts: RequestParts | None = None) -> None:
        self._last_outcome = outcome
        self._runner = None
        self.approvals.deny_all()
        self._emit_context_status(parts)
        self.emit(TurnEnded(outcome.reason, outcome.text, outcome.iterations))
        self.bus.set_state(LoopState.IDLE)

    def _emit_context_status(self, parts: RequestParts | None = None) -> None:
        """The figure /context shows for the history now, and any workspace file the prompt skipped."""
        try:
            ctx = self.turn_context()
            parts = parts or RequestParts.build(ctx)
            self._show_workspace_warnings(parts.prompt.warnings)
            self.emit(context_status(ctx, govern(ctx, parts)))
        except Exception as exc:  # e.g. the fixed part no longer fits: the next turn reports it
            log.debug("cannot measure the context: %s", exc)

    async def stop(self) -> None:
        """Stop the running turn at once: the stream and running tools are cancelled."""
        task = self._turn_task
        self.queued.clear()
        if task is None or task.done():
            return
        self._stop_requested = True
        self.bus.set_state(LoopState.STOPPING)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.bus.set_state(LoopState.IDLE)

    async def compact(self, instructions: str | None = None) -> CompactionFinished:
        """`/compact [instructions]`: compact now, also when auto-compaction is paused."""
        if self._turn_task is not None and not self._turn_task.done():
            event = CompactionFinished(
                False, 0, 0, 0, 0, "A turn is running; /compact after it ends (or /stop)."
            )
            self.emit(event)
            return event
        self._compaction.failures = 0
        manager = self.compaction()
        result = await manager.run(
            RequestParts.build(manager.ctx), reason="requested by the user", instructions=instructions
        )
        self._emit_context_status()
        return result

    async def undo_compaction(self) -> CompactionUndone:
        """`/compact undo`: void the latest compaction in force; the history is rebuilt as it was before it."""
        if (self._turn_task is not None and not self._turn_task.done()) or self.state is not LoopState.IDLE:
            event = CompactionUndone(
                False, "Busy: /compact undo once the turn or compaction has ended (or /stop)."
            )
            self.emit(event)
            return event
        result = await self.compaction().undo()
        self._emit_context_status()
        return result

    async def dream(
        self, *, dry_run: bool = False, manual: bool = True, include_this_session: bool = False
    ) -> DreamResult:
        """`/dream` (by hand: also when paused), `catbuddy run --dream` (``include_this_session``)."""
        if include_this_session:
            await self.memory.session_ended(self._conversation)
        return await self.memory.dream(manual=manual, dry_run=dry_run)

    def answer_dream(self, proposal_id: str, choice: DreamChoice | str) -> bool:
        return self.memory.answer(proposal_id, choice)

    def memory_status(self) -> dict[str, Any]:
        return self.memory.status()

    async def new_session(self) -> None:
        await self.stop()
        await self.memory.session_ended(self._conversation)
        if self._conversation is not None:
            self._conversation.close()
        self._create_session()

    async def resume(self, session_id: str) -> None:
        await self.stop()
        old = self._conversation
        if old is not None and old.id == session_id:
            return
        if old is not None:
            await self.memory.session_ended(old)
            old.close()
        try:
            self._open_session(session_id)
        except Exception:
            if old is not None:
                self._open_session(old.id)
            raise
