"""AgentLoop: the state machine IDLE → RUN ⇄ COMPACT → IDLE (+ STOPPING) that front ends drive.

It owns the session (JSONL on disk), the working history, the tools and the provider, runs one
turn at a time, queues input that arrives meanwhile, and reports everything as typed events.
See /docs in the README for the public API; the TUI and `catbuddy run` use nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from catbuddy.agent.compaction import CompactionManager
from catbuddy.agent.events import (
    CompactionFinished,
    ErrorOccurred,
    Event,
    LoopState,
    Notice,
    StateChanged,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
)
from catbuddy.agent.runner import TurnOutcome, TurnRunner
from catbuddy.agent.toolset import build_registry, refresh_external
from catbuddy.config import APPROVAL_MODES, Settings
from catbuddy.context.builder import ContextBuilder
from catbuddy.context.calibration import CalibrationStore
from catbuddy.context.governor import Budget
from catbuddy.context.report import ContextReport, LayerSize, budget_for, measure
from catbuddy.context.tokens import TokenCounter, counter_for
from catbuddy.session.history import HistoryEntry, WorkingHistory, rebuild_history
from catbuddy.session.store import Session, SessionInfo, SessionStore
from catbuddy.tools.base import ToolContext
from catbuddy.tools.guard import ApprovalPolicy
from catbuddy.workspace import Workspace

log = logging.getLogger(__name__)

Listener = Callable[[Event], None]

__all__ = ["AgentLoop", "ContextReport", "LayerSize"]


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
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.channel = channel
        self.interactive = channel != "headless" if interactive is None else interactive
        self._resume = resume
        self._continue_latest = continue_latest
        self._model = settings.model_name
        self.store = SessionStore(workspace.sessions_dir)
        self.builder = ContextBuilder(workspace, settings)
        self.calibration = CalibrationStore.in_home(workspace.home)
        self.policy = ApprovalPolicy(settings.approval, settings, workspace)
        self.mcp: Any = None
        self._mcp_failures_shown: set[str] = set()
        self.registry = build_registry()
        self.tool_context = ToolContext(workspace, settings)
        self.compaction = CompactionManager(self)
        self.history = WorkingHistory()
        self.queued: list[str] = []
        self.last_request_tokens = 0
        self._session: Session | None = None
        self._transcript: list[dict[str, Any]] = []
        self._listeners: list[Listener] = []
        self._state = LoopState.IDLE
        self._provider: Any = None
        self._provider_lock = asyncio.Lock()
        self._turn_task: asyncio.Task[None] | None = None
        self._runner: TurnRunner | None = None
        self._turns = 0
        self._stop_requested = False
        self._last_outcome = TurnOutcome(TurnEndReason.DONE)

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Open (or create) the session and connect MCP servers in the background."""
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
        if self.settings.mcp_servers:
            await self._start_mcp()

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

    async def aclose(self) -> None:
        if self._turn_task is not None and not self._turn_task.done():
            await self.stop()
        if self.mcp is not None:
            with contextlib.suppress(Exception):
                await self.mcp.aclose()
            self.mcp = None
        if self._session is not None:
            self._session.close()
        provider, self._provider = self._provider, None
        if provider is not None:
            with contextlib.suppress(Exception):
                await provider.aclose()

    def _create_session(self) -> None:
        self._session = self.store.create(self.workspace.work_root, self.model)
        self.history = WorkingHistory()
        self._transcript = []

    def _open_session(self, session_id: str) -> None:
        session = self.store.open(session_id)
        loaded = session.load()
        self._session = session
        self.history = rebuild_history(loaded.records)
        self._transcript = [record.message for record in loaded.messages]
        problems = list(loaded.problems) + list(self.history.problems)
        for problem in problems:
            self.emit(Notice(f"Session {session.id}: {problem}", "warning"))
        if loaded.meta is not None and loaded.meta.model and self.settings.model is None:
            self._model = loaded.meta.model

    # --- events ---------------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken front end must not break the agent
                log.exception("event listener failed on %s", event.kind)

    def set_state(self, state: LoopState) -> None:
        if state is not self._state:
            old, self._state = self._state, state
            self.emit(StateChanged(old, state))

    def record_event(self, kind: str, **data: Any) -> None:
        if self._session is not None and not self._session.closed:
            self._session.append_event(kind, **data)

    # --- state ----------------------------------------------------------------------------------

    @property
    def state(self) -> LoopState:
        return self._state

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("the agent loop has not started: call `await loop.start()` first")
        return self._session

    @property
    def session_id(self) -> str:
        return self._session.id if self._session is not None else ""

    @property
    def model(self) -> str:
        return self._model

    def set_model(self, model: str) -> None:
        model = model.strip()
        if not model:
            raise ValueError("a model name is needed, e.g. /model gpt-4o")
        self._model = model
        self.record_event("model", model=model)

    @property
    def approval_mode(self) -> str:
        return str(self.policy.mode)

    def set_approval_mode(self, mode: str) -> None:
        if mode not in APPROVAL_MODES:
            raise ValueError(f"unknown approval mode {mode!r}; use one of {', '.join(APPROVAL_MODES)}")
        self.policy.mode = mode
        self.record_event("approval_mode", mode=mode)

    @property
    def counter(self) -> TokenCounter:
        return counter_for(self.settings.encoding_for(self._model))

    @property
    def budget(self) -> Budget:
        return budget_for(self.settings, self._model)

    @property
    def calibration_factor(self) -> float:
        return self.calibration.factor(self._model)

    def append_message(self, message: dict[str, Any]) -> str:
        """Persist first, then add to the working history: what is on disk is what was sent."""
        message_id = self.session.append_message(message)
        self.history.entries.append(HistoryEntry(message_id, message))
        self._transcript.append(message)
        self.compaction.note_new_message()
        return message_id

    def transcript(self) -> list[dict[str, Any]]:
        return list(self._transcript)

    def list_sessions(self) -> list[SessionInfo]:
        return self.store.list()

    async def get_provider(self) -> Any:
        async with self._provider_lock:
            if self._provider is None:
                from catbuddy.llm.provider import Provider

                self._provider = await asyncio.to_thread(Provider, self.settings)
            return self._provider

    async def warm_up(self) -> None:
        """Import and build the client in the background so the first turn does not wait for it."""
        with contextlib.suppress(Exception):
            await self.get_provider()

    def context_report(self) -> ContextReport:
        return measure(
            settings=self.settings,
            model=self._model,
            prompt=self.builder.build(self.channel),
            tools=self.registry.schemas(),
            counter=self.counter,
            budget=self.budget,
            summary=self.history.summary,
            history=self.history.messages,
            calibration=self.calibration_factor,
        )

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
        runner = self._runner = TurnRunner(self)
        self.set_state(LoopState.RUN)
        self.emit(TurnStarted(self._turns, text))
        try:
            outcome = await runner.run(text)
        except asyncio.CancelledError:
            runner.keep_partial_work()
            self.record_event("stop", turn=self._turns)
            outcome = TurnOutcome(TurnEndReason.STOPPED)
            if not self._stop_requested:
                self._finish_turn(outcome)
                raise
        except Exception as exc:  # the loop must survive anything a turn throws
            log.exception("turn failed")
            self.emit(
                ErrorOccurred(f"Unexpected error: {exc}", "See the log; the session is saved and usable.")
            )
            self.record_event("error", message=str(exc))
            outcome = TurnOutcome(TurnEndReason.ERROR)
        self._finish_turn(outcome)

    def _finish_turn(self, outcome: TurnOutcome) -> None:
        self._last_outcome = outcome
        self._runner = None
        self.emit(TurnEnded(outcome.reason, outcome.text, outcome.iterations))
        self.set_state(LoopState.IDLE)

    async def stop(self) -> None:
        """Stop the running turn at once: the stream and running tools are cancelled."""
        task = self._turn_task
        self.queued.clear()
        if task is None or task.done():
            return
        self._stop_requested = True
        self.set_state(LoopState.STOPPING)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self.set_state(LoopState.IDLE)

    async def compact(self, instructions: str | None = None) -> CompactionFinished:
        """`/compact [instructions]`: compact now, also when auto-compaction is paused."""
        if self._turn_task is not None and not self._turn_task.done():
            event = CompactionFinished(
                False, 0, 0, 0, 0, "A turn is running; /compact after it ends (or /stop)."
            )
            self.emit(event)
            return event
        self.compaction.failures = 0
        return await self.compaction.run(reason="requested by the user", instructions=instructions)

    async def new_session(self) -> None:
        await self.stop()
        if self._session is not None:
            self._session.close()
        self._create_session()
        self.compaction = CompactionManager(self)

    async def resume(self, session_id: str) -> None:
        await self.stop()
        old = self._session
        if old is not None and old.id == session_id:
            return
        if old is not None:
            old.close()
        try:
            self._open_session(session_id)
        except Exception:
            if old is not None:
                self._open_session(old.id)
            raise
        self.compaction = CompactionManager(self)
