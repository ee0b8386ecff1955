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
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from catbuddy.agent.approval_broker import ApprovalBroker
from catbuddy.agent.bus import EventBus, Listener
from catbuddy.agent.compaction import CompactionManager, CompactionState
from catbuddy.agent.custom_commands import custom_invocation, restricted
from catbuddy.agent.events import (
    ApprovalChoice,
    ApprovalDecision,
    ApprovalModeChanged,
    CheckpointSaved,
    CompactionFinished,
    CompactionUndone,
    ContextStatus,
    DreamChoice,
    ErrorOccurred,
    Event,
    FilesRestored,
    LoopState,
    ModelChanged,
    Notice,
    PlanModeChanged,
    PlanUpdated,
    SessionOpened,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    TurnStopped,
)
from catbuddy.agent.hook_steps import hook_runner
from catbuddy.agent.memory_keeper import MemoryKeeper
from catbuddy.agent.plan_mode import PlanMode
from catbuddy.agent.runner import TurnOutcome, TurnRunner, context_status, govern
from catbuddy.agent.subagent import Subagents
from catbuddy.agent.toolset import build_registry, refresh_external
from catbuddy.agent.turn_context import RequestParts, TurnContext
from catbuddy.checkpoints.manager import Checkpoints, Restore
from catbuddy.config import Settings
from catbuddy.config_checks import EFFORTS
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.context.compaction.plan import Plan, latest_plan
from catbuddy.context.counting.calibration import CalibrationStore
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.report import ContextReport, budget_for, context_report
from catbuddy.errors import CatbuddyError, explain
from catbuddy.llm.lazy import LazyProvider, ProviderFactory, openai_provider
from catbuddy.memory.dream import DreamResult
from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.sandbox import describe as sandbox_description
from catbuddy.session.conversation import Conversation
from catbuddy.session.fork import FORKED_KIND, fork_session
from catbuddy.session.history import RESTORED_META_KEY, REWIND_KIND, HistoryEntry, message_number
from catbuddy.session.store import Session, SessionInfo, SessionStore
from catbuddy.tools.base import ToolContext
from catbuddy.tools.registry import ToolRegistry, edit_tools_for, offer_edit_tools
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
        self.registry = build_registry(subagents=settings.agents.max_depth >= 1)
        self.checkpoints = Checkpoints(
            workspace.sessions_dir.parent,
            workspace.work_root,
            settings.tools.checkpoint_max_file_mb * 1_000_000,
            enabled=settings.tools.checkpoints,
            home=workspace.home,
        )
        self.tool_context = ToolContext(workspace, settings, sessions_dir=self.store.sessions_dir)
        # The plan, plan mode and subagents (docs/architecture.md §5c).
        self.planning = PlanMode(workspace.work_root)
        self.subagents = Subagents(
            self.turn_context,
            plan_mode=lambda: self.planning.active,
            plan_layers=lambda: self.planning.layers(self.planning.registry(self.registry)),
        )
        self.tool_context.current_plan = self.current_plan
        if settings.agents.max_depth >= 1:
            self.tool_context.delegate = self.subagents
        self.provider = LazyProvider(settings, provider_factory)
        self.bus = EventBus(self._secrets)
        self.bus.set_recorder(self._record)
        self.approvals = ApprovalBroker()
        self.hooks = hook_runner(workspace, settings)
        self.queued: list[str] = []
        # Files put back (/undo, /redo, /rewind) since the last turn: the next user message tells the model,
        # and keeps them as data in its meta for the compaction ledger.
        self._restores_for_model: list[dict[str, Any]] = []
        self.pending_images: list[Path] = []  # `--image FILE`: attached to the next turn's message
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
        if self.checkpoints.missing_git:
            self.emit(Notice("git was not found: checkpoints are off, so turns cannot be undone.", "warning"))
        elif self.checkpoints.enabled and self.channel == "tui":
            # A daemon thread: quitting never waits for it (the git it runs finishes on its own).
            threading.Thread(target=self.checkpoints.warm_up, name="checkpoint-warm-up", daemon=True).start()
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
        for restored in conversation.restores_since:  # e.g. `catbuddy undo` while the session was closed
            self._note_restored(
                str(restored.get("action", "undo")), list(restored["paths"]), restored.get("turns", [])
            )

    def _set_conversation(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._restores_for_model = []  # a restore belongs to the session it was made in
        self._compaction = CompactionState()
        self.tool_context.session_id = conversation.id  # what `recall` searches
        self.emit(
            SessionOpened(conversation.id, conversation.resumed, self.model, str(conversation.session.path))
        )
        plan = self.current_plan()
        if plan is not None:  # a resumed session's plan, for the front end's panel
            self.emit(PlanUpdated([step.to_json() for step in plan.steps], plan.explanation))

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

    # --- the plan and plan mode (docs/architecture.md §5c) ----------------------------------------

    def current_plan(self) -> Plan | None:
        """The newest plan `update_plan` set in this session, folded messages included."""
        if self._conversation is None:
            return None
        return latest_plan(entry.meta for entry in self._conversation.transcript)

    @property
    def plan_mode(self) -> bool:
        return self.planning.active

    def set_plan_mode(self, active: bool) -> None:
        """Plan mode on (from the next turn: only reading tools, the model plans) or off; a running turn
        keeps the tools and rules it started with."""
        if self.planning.active != active:
            self.planning.active = active
            self.emit(PlanModeChanged(active))

    def accept_plan(self) -> Plan | None:
        """The user accepts the plan: plan mode ends, the plan stays (the model carries it out next)."""
        self.set_plan_mode(False)
        return self.current_plan()

    def delegation_report(self) -> dict[str, Any]:
        """The plan and each subagent call's tokens spent vs returned (/context); reads the session file."""
        from catbuddy.agent.plan_report import plan_and_delegation
        from catbuddy.session.records import read_session_file

        return plan_and_delegation(read_session_file(self.session.path).records)

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

    def turn_context(
        self, model: str | None = None, only_tools: tuple[str, ...] | None = None
    ) -> TurnContext:
        """The collaborators of one turn or one /compact, with the model and its budget fixed (a custom
        command may ask for another ``model`` and ``only_tools``, for its turn)."""
        model = model or self._model
        offer_edit_tools(self.registry, edit_tools_for(model, self.settings.model_spec(model).edit_tools))
        offered = self.registry if only_tools is None else restricted(self.registry, only_tools)
        registry = self.planning.registry(offered)  # plan mode offers reading tools only
        return TurnContext(
            settings=self.settings,
            workspace=self.workspace,
            model=model,
            channel=self.channel,
            interactive=self.interactive,
            conversation=self.conversation,
            builder=self.builder,
            registry=registry,
            counter=counter_for(self.settings.encoding_for(model)),
            budget=budget_for(self.settings, model),
            calibration=self.calibration,
            policy=self.planning.policy(self.policy),
            tools=self.tool_context,
            provider=self.provider,
            bus=self.bus,
            approvals=self.approvals,
            secrets=self._secrets,
            extra_layers=self._extra_layers(registry),
            checkpoints=self.checkpoints,
            hooks=self.hooks,
        )

    def _extra_layers(self, registry: ToolRegistry) -> tuple[tuple[str, str], ...]:
        """After the assembled prompt: the user's own agents (when subagents run), plan mode's instructions."""
        agents = self.subagents.prompt_layers(self.workspace) if self.tool_context.delegate is not None else ()
        return agents + self.planning.layers(registry)

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
        # `/name args` naming a custom command sends its prompt, with its model and tools (commands/).
        command = (
            await asyncio.to_thread(custom_invocation, self.workspace, self.settings, text)
            if text.lstrip().startswith("/")
            else None
        )
        prompt = command.prompt if command is not None else text
        message_meta = None
        if self._restores_for_model:  # what changed outside the conversation since the last turn
            prompt = prompt + "\n\n" + "\n".join(_restore_note(**r) for r in self._restores_for_model)
            message_meta = {RESTORED_META_KEY: self._restores_for_model}
            self._restores_for_model = []
        ctx = self.turn_context(*((command.model, command.allowed_tools) if command else ()))
        runner = self._runner = TurnRunner(ctx, CompactionManager(ctx, self._compaction))
        self.bus.set_state(LoopState.RUN)
        self.checkpoints.begin_turn(self.session_id, self.session.next_message_id)
        self.emit(TurnStarted(self._turns, text))
        if command is not None and command.notice:
            self.emit(Notice(command.notice, "warning"))
        try:
            runner.images, self.pending_images = self.pending_images, []
            outcome = await runner.run(prompt, message_meta)
        except asyncio.CancelledError:
            runner.keep_partial_work()
            self.emit(TurnStopped(self._turns))
            outcome = TurnOutcome(TurnEndReason.STOPPED)
            if not self._stop_requested:
                self.checkpoints.end_turn()  # a cancelled task cannot await: taken here, blocking
                self._finish_turn(outcome)
                raise
        except Exception as exc:  # the loop must survive anything a turn throws
            outcome = self._turn_failed(ctx, exc)
        await self._checkpoint_turn()
        # A turn that ended with a plain answer ran nothing after its last call's prompt was built:
        # the status reuses it (the prompt is built once per model call, not again at the turn's end).
        self._finish_turn(outcome, runner.parts if outcome.reason is TurnEndReason.DONE else None)

    async def _checkpoint_turn(self) -> None:
        record = await asyncio.to_thread(self.checkpoints.end_turn)
        if record is not None:
            files = await asyncio.to_thread(
                self.checkpoints.shadow.changed_between, record.before, record.after
            )
            self.emit(CheckpointSaved(record.id, record.message_id, len(files)))

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

    # --- undo, redo, rewind, fork (docs/architecture.md §15) ------------------------------------------

    async def plan_restore(self, action: str, message_id: str | None = None) -> Restore | None:
        """What /undo, /redo or /rewind (to just before ``message_id``) would put back in this session;
        None when there is nothing to undo or redo."""
        if action == "undo":
            return await asyncio.to_thread(self.checkpoints.plan_undo, self.session_id)
        if action == "redo":
            return await asyncio.to_thread(self.checkpoints.plan_redo, self.session_id)
        if message_id is None:
            raise ValueError("a rewind needs the message to go back to")
        return await asyncio.to_thread(self.checkpoints.plan_rewind, self.session_id, message_id)

    async def restore_files(self, restore: Restore, action: str, *, overwrite: bool = False) -> list[str]:
        """Put the planned files back (conflicts too when ``overwrite``); recorded in the session."""
        paths = await asyncio.to_thread(
            self.checkpoints.apply, restore, undo=action != "redo", overwrite_conflicts=overwrite
        )
        kept = [p for p in restore.conflicts if p not in paths]
        self.emit(FilesRestored(action, [t.id for t in restore.turns], paths, kept))
        if paths:
            self._note_restored(action, paths, [t.id for t in restore.turns])
        return paths

    def _note_restored(self, action: str, paths: list[str], turns: list[str]) -> None:
        """The history still shows the undone edits: the next user message tells the model."""
        self._restores_for_model.append({"action": action, "turns": list(turns), "paths": list(paths)})

    async def rewind_conversation(self, message_id: str) -> int:
        """The conversation ends just before ``message_id`` (a record; the file only grows); returns
        how many messages the working history holds now."""
        self.session.append_event(REWIND_KIND, to=message_id)
        history = await asyncio.to_thread(self.conversation.reload_history)
        cut = message_number(message_id)
        self.conversation.transcript = [e for e in self.conversation.transcript if message_number(e.id) < cut]
        return len(history.entries)

    async def fork(self, at: str | None = None) -> str:
        """A new session with this one's history (before message ``at``, if given); its id. The loop
        stays on this session: resume the fork to continue it."""
        new_id = await asyncio.to_thread(
            fork_session, self.store, self.session.path, self.workspace.work_root, at
        )
        self.session.append_event(FORKED_KIND, role="source", fork=new_id, at=at or "")
        return new_id

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


def _restore_note(action: str, turns: list[str], paths: list[str]) -> str:
    """What the model is told of one /undo, /redo or /rewind, with the next user message."""
    shown = ", ".join(paths[:20]) + (f" and {len(paths) - 20} more" if len(paths) > 20 else "")
    when = "after" if action == "redo" else "before"
    return (
        f"[catbuddy: the user ran {action}; these files are back as they were {when} turn "
        f"{', '.join(turns)}: {shown}. Read a file again before editing it.]"
    )
