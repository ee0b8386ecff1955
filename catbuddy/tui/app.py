"""catbuddy's Textual TUI: paints first, then opens the session and streams the loop's events in.

Events arrive from the AgentLoop in the app's own asyncio loop; they are queued and applied by one
pump task, which writes streamed text to the reply (widgets/reply.py) at most every ``FLUSH_INTERVAL``
so typing stays responsive however fast the model streams.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import OptionList, TextArea

from catbuddy.agent.api import Agent
from catbuddy.config import Settings
from catbuddy.errors import CatbuddyError, explain
from catbuddy.logs import LOG_FILE
from catbuddy.messages import strip_runtime_block
from catbuddy.stop_signals import install_stop_signals
from catbuddy.tui import type_through
from catbuddy.tui.lazy import lazy_module
from catbuddy.tui.plan_commands import PlanCommands
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock, UserBlock
from catbuddy.tui.widgets.plan_panel import PlanPanel
from catbuddy.tui.widgets.prompt import Completer, PromptArea, PromptBox, QueuedView
from catbuddy.tui.widgets.status import StatusBar
from catbuddy.tui.widgets.transcript import Transcript
from catbuddy.workspace import Workspace

if TYPE_CHECKING:
    from catbuddy.agent import events as ev
    from catbuddy.tui.screens.approval import ApprovalScreen
    from catbuddy.tui.screens.setup import SetupResult
    from catbuddy.tui.widgets.reply import AssistantBlock
    from catbuddy.tui.widgets.thinking import ThinkingBlock
else:  # the engine's events: imported once the first event (or key) needs them, after the first frame
    ev = lazy_module("catbuddy.agent.events")

FLUSH_INTERVAL = 0.05  # seconds between writes of streamed text
EXIT_PRESS_WINDOW = 2.0  # a second Ctrl+C within this many seconds exits
START_WAIT = 15.0  # seconds an exit waits for a session still opening, so it is closed and named

LoopFactory = Callable[..., Agent]


def preload(settings: Settings) -> None:
    """In a worker thread before the session opens: the engine's modules and the tokenizer, which
    would otherwise load on the event loop (~0.3 s) while the user may already be typing."""
    import catbuddy.agent.loop  # noqa: F401
    from catbuddy.context.counting.tokens import counter_for

    counter_for(settings.encoding_for()).load()


def default_loop_factory(workspace: Workspace, settings: Settings, **kwargs: Any) -> Agent:
    from catbuddy.agent.loop import AgentLoop

    return AgentLoop(workspace, settings, channel="tui", background_dream=True, **kwargs)


class CatbuddyApp(PlanCommands):
    CSS_PATH = "app.tcss"
    TITLE = "catbuddy"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("escape", "escape", "Stop / clear", show=False),
        Binding("ctrl+c", "ctrl_c", "Exit", show=False, priority=True),
        Binding("ctrl+l", "focus_prompt", "Input", show=False),
        Binding("shift+tab", "cycle_mode", "Approval / plan mode", show=False, priority=True),
        Binding("ctrl+t", "toggle_plan_panel", "Fold the plan", show=False),
    ]

    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        *,
        resume: str | None = None,
        continue_latest: bool = False,
        loop_factory: LoopFactory = default_loop_factory,
        approval_arm_delay: float | None = None,  # None: the dialog's own ARM_DELAY
        first_message: str | None = None,
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.settings = settings
        self.resume_id = resume
        self.continue_latest = continue_latest
        self.loop_factory = loop_factory
        self.approval_arm_delay = approval_arm_delay
        self.loop: Agent | None = None
        self.session_id: str | None = None
        self.start_error: Exception | None = None  # why the loop could not start; run_tui raises it
        self.first_frame_at: float | None = None
        # Typed before the loop was ready (the demo's first message is sent this way, for the user).
        self._pending_inputs: list[str] = [first_message] if first_message else []
        self._early: list[tuple[str, UserBlock]] = []  # shown at once, their turn not started yet
        self._events: list[ev.Event] = []
        self._wake = asyncio.Event()
        self._reply: AssistantBlock | None = None
        self._thinking: ThinkingBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._approvals: dict[str, ApprovalScreen] = {}
        self._last_ctrl_c = 0.0
        self._loop_closed = False
        self._quitting = False
        self._remove_stop_signals: Callable[[], None] | None = None
        self._sandbox_probed = False
        self._starting = False  # the session is being opened in the background
        self._start_settled = asyncio.Event()  # ... and that has finished, or failed

    # --- layout and start-up ------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield PromptBox()
        yield PlanPanel()  # docked above the input
        yield Transcript()

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def prompt(self) -> PromptArea:
        return self.query_one(PromptArea)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    def on_mount(self) -> None:
        self.status.set(model=self.settings.model or "", approval=self.settings.approval, state="starting")
        self.prompt.focus()
        self.run_worker(self._pump(), name="event-pump", group="pump")
        # SIGTERM and SIGHUP end the app as Ctrl+C twice does: the turn stops (stop record, children
        # killed), the session closes, the resume command is printed.
        _, self._remove_stop_signals = install_stop_signals(self._stop_signal)
        if not self.settings.model_configured:
            from catbuddy.tui.screens.setup import SetupScreen

            self.call_after_refresh(self._probe_sandbox)  # no engine to wait for while the form is open

            self.status.set(state="setup")
            self.push_screen(
                SetupScreen(
                    self.workspace.home / "config.toml", self.settings.base_url, self.settings.api_key_env
                ),
                callback=self._setup_done,
            )
            return
        self.call_after_refresh(self._after_first_frame)

    def _stop_signal(self, signum: int) -> None:
        self.call_later(self.quit)  # as the second Ctrl+C does, from the app's own message queue

    def _probe_sandbox(self) -> None:
        """After the first frame (and after the engine's modules are in): the bwrap probe, once."""
        if self._sandbox_probed:
            return
        self._sandbox_probed = True
        probe: Callable[[], Any] = self._show_sandbox  # the coroutine is created when the worker runs
        self.run_worker(probe, name="sandbox-status", group="sandbox")

    async def _show_sandbox(self) -> None:
        from catbuddy import sandbox  # already imported by the preload, except on the setup screen

        current = await asyncio.to_thread(sandbox.status, self.settings)  # probes bwrap once, off the loop
        self.status.set(sandbox=current.label)

    def _after_first_frame(self) -> None:
        self.first_frame_at = time.perf_counter()
        self.run_worker(self._start_loop(), name="start-loop", group="loop")

    def _setup_done(self, result: SetupResult | None) -> None:
        if result is None:
            return
        self.settings = replace(
            self.settings,
            base_url=result.base_url,
            model=result.model,
            api_key_env=result.api_key_env,
            api_key=result.api_key,
        )
        self.status.set(model=result.model)
        self._after_first_frame()

    async def _start_loop(self) -> None:
        self._starting = True
        try:
            await self._open_session()
        finally:
            self._start_settled.set()
        if self.loop is None or self._quitting:
            return
        loop = self.loop
        self.run_worker(loop.warm_up(), name="warm-provider", group="warm")  # off the event loop
        self.run_worker(self.load_custom_commands(), name="custom-commands", group="commands")
        await self.show_session(keep=[block for _, block in self._early])
        pending, self._pending_inputs = self._pending_inputs, []
        for text in pending:
            loop.submit(text)
        self.refresh_queue()

    async def _open_session(self) -> None:
        try:
            await asyncio.to_thread(preload, self.settings)
        except Exception as exc:  # the loop's own start reports what is wrong
            self.log.warning(f"preloading failed: {exc!r}")
        # Once the preload is done: no two threads import the engine's modules at the same time.
        self._probe_sandbox()
        loop = self.loop_factory(
            self.workspace, self.settings, resume=self.resume_id, continue_latest=self.continue_latest
        )
        loop.add_listener(self._on_loop_event)
        try:
            await loop.start()
        except Exception as exc:  # SessionLocked, SessionNotFound, …: nothing to run without a session
            self.start_error = exc  # said once the terminal is back, by the command's one error handler
            self.exit(None, return_code=getattr(exc, "exit_code", 1))
            return
        self.loop = loop
        self.session_id = loop.session_id  # known from here on, even if the user exits at once

    async def show_session(self, keep: list[UserBlock] | None = None) -> None:
        """Mount the (newest part of the) session and fill the status bar; ``keep``: blocks of
        messages sent before the session opened, left after it."""
        loop = self.loop
        assert loop is not None
        self.session_id = loop.session_id
        self._events.clear()  # anything still pending belongs to the view being replaced
        self._reply = None
        self._thinking = None
        self._tools.clear()
        await self.transcript.reset(loop.transcript(), keep=keep or [])
        self.status.set(
            model=loop.model,
            session_id=loop.session_id,
            approval=loop.approval_mode,
            state=_state(loop.state),
        )
        self.refresh_context()
        self.show_current_plan()
        if not self.transcript.blocks:
            self.notice(
                f"catbuddy in {self.workspace.work_root} · model {loop.model} · /help for commands and keys",
                "info",
            )

    def refresh_context(self) -> None:
        """The status bar's context figures before the first request (no LLM call)."""
        if self.loop is None:
            return
        try:
            report = self.loop.context_report()
        except Exception as exc:  # a broken workspace file must not take the UI down
            self.notice(f"Could not measure the context: {exc}", "warning")
            return
        self.status.set(
            used=report.used,
            budget=report.budget,
            compact_at=report.compact_threshold_tokens,
            cache_hit=report.usage.last_hit_rate if report.usage is not None else None,
        )

    # --- events from the loop -----------------------------------------------------------------

    def _on_loop_event(self, event: ev.Event) -> None:
        self._events.append(event)
        self._wake.set()

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._events = self._events, []
            try:
                await self._apply(batch)
            except Exception as exc:  # one bad event must not take the whole UI down
                self.log.error(f"applying loop events failed: {exc!r}")
                self.notice(f"Display error: {exc!r}", "error")
            if any(isinstance(event, ev.TextDelta) for event in batch):
                await asyncio.sleep(FLUSH_INTERVAL)  # let deltas pile up: one reply update per interval

    async def _apply(self, batch: list[ev.Event]) -> None:
        text: list[str] = []
        for event in batch:
            if isinstance(event, ev.TextDelta):
                text.append(event.text)
                continue
            if text:
                await self._stream("".join(text))
                text = []
            if isinstance(event, ev.ReasoningDelta):
                await self._think(event.text)
                continue
            await self._handle(event)
        if text:
            await self._stream("".join(text))

    async def _think(self, text: str) -> None:
        """Reasoning streams into its own dim block (tui/widgets/thinking.py), folded when the answer starts."""
        if self._thinking is None:
            from catbuddy.tui.widgets.thinking import ThinkingBlock

            self._thinking = ThinkingBlock()
            await self.transcript.add(self._thinking)
        if self._thinking.is_attached:
            self._thinking.write(text)

    def _end_thinking(self) -> None:
        thinking, self._thinking = self._thinking, None
        if thinking is not None:
            thinking.finish()

    async def _stream(self, text: str) -> None:
        self._end_thinking()
        reply = self._reply
        if reply is None:
            from catbuddy.tui.widgets.reply import AssistantBlock

            reply = self._reply = AssistantBlock()
            await self.transcript.add(reply)
        if reply.is_attached:
            await reply.write(text)

    async def _end_reply(self, final_text: str | None = None) -> None:
        self._end_thinking()
        if self._reply is not None:
            reply, self._reply = self._reply, None
            await reply.finish(final_text)
        elif final_text and final_text.strip():
            from catbuddy.tui.widgets.reply import AssistantBlock

            await self.transcript.add(AssistantBlock(final_text))

    async def _handle(self, event: ev.Event) -> None:
        if self.on_plan_event(event):  # the plan panel, plan mode (tui/plan_commands.py)
            return
        if isinstance(event, ev.TurnStarted):
            early = self._early.pop(0)[1] if self._early and self._early[0][0] == event.user_text else None
            if early is not None:  # shown when it was sent
                early.user_ordinal = self.transcript.user_count
            else:
                await self.transcript.add(
                    UserBlock(strip_runtime_block(event.user_text), self.transcript.user_count)
                )
            self.transcript.user_count += 1
            self.refresh_queue()
        elif isinstance(event, ev.StateChanged):
            self.status.set(state=_state(event.new))
            self.refresh_queue()
        elif isinstance(event, ev.AssistantMessage):
            await self._end_reply(_text_of(event.message))
        elif isinstance(event, ev.ToolCallStarted):
            await self._end_reply()
            await self._tool_started(event.call_id, event.name, event.arguments, event.summary)
        elif isinstance(event, ev.ToolCallFinished):
            block = self._tools.pop(event.call_id, None)
            if block is None:
                block = await self._tool_started(event.call_id, event.name, "", "")
                self._tools.pop(event.call_id, None)
            block.finish(event.result, event.is_error, event.duration, event.display, event.meta)
        elif isinstance(event, ev.ApprovalRequested):
            if event.answerable:
                await self._ask_approval(event)
        elif isinstance(event, ev.ContextStatus):
            self.status.set(
                used=event.used, budget=event.budget, compact_at=event.compact_at, model=event.model
            )
        elif isinstance(event, ev.UsageReported):
            if event.prompt_tokens:
                self.status.set(cache_hit=min(1.0, event.cached_tokens / event.prompt_tokens))
        elif isinstance(event, ev.GovernanceReported):
            self.notice(f"⚙ {event.summary}", "info")
        elif isinstance(event, ev.Notice):
            self.notice(event.text, event.level)
        elif isinstance(event, ev.Retrying):
            self.notice(
                f"↻ retrying in {event.delay:.0f}s (attempt {event.attempt}): {event.reason}", "warning"
            )
        elif isinstance(event, ev.CompactionFinished):
            self._compaction_notice(event)
        elif isinstance(event, ev.DreamProposed):
            await self.ask_dream(event)
        elif isinstance(event, ev.ErrorOccurred):
            text = f"✗ {event.message}" + (f"\n  → {event.hint}" if event.hint else "")
            self.notice(text, "error")
        elif isinstance(event, ev.TurnEnded):
            await self._turn_ended(event)

    def tool_block(self, call_id: str) -> ToolBlock | None:
        """The block of a call still running, if shown."""
        return self._tools.get(call_id)

    async def _tool_started(self, call_id: str, name: str, arguments: str, summary: str) -> ToolBlock:
        block = self._tools.get(call_id)
        if block is None:
            block = ToolBlock(call_id, name, arguments, summary)
            self._tools[call_id] = block
            await self.transcript.add(block)
        return block

    async def _ask_approval(self, request: ev.ApprovalRequested) -> None:
        block = await self._tool_started(
            request.call_id, request.name, _json_arguments(request.arguments), request.summary
        )
        block.set_status("waiting")

        def answered(decision: ev.ApprovalDecision | None) -> None:
            self._approvals.pop(request.call_id, None)
            if decision is None:
                decision = ev.ApprovalDecision(ev.ApprovalChoice.DENY)
            if self.loop is not None:
                self.loop.answer_approval(request.call_id, decision.choice, decision.note, decision.pattern)
            if block.status == "waiting":
                block.set_status("running" if decision.allowed else "error")
            if decision.choice is ev.ApprovalChoice.ALLOW_SESSION and decision.pattern:
                self.notice(f"Allowed for this session: {request.name} `{decision.pattern}`", "info")
            self.prompt.focus()

        from catbuddy.tui.screens.approval import ApprovalScreen

        screen = ApprovalScreen(request, self.approval_arm_delay)
        self._approvals[request.call_id] = screen
        await self.push_screen(screen, callback=answered)

    def _compaction_notice(self, event: ev.CompactionFinished) -> None:
        if event.ok:
            saved = event.tokens_before - event.tokens_after
            self.notice(
                f"⚙ compacted {event.folded_messages} messages into a {event.summary_tokens:,}-token summary: "
                f"{event.tokens_before:,} → {event.tokens_after:,} tokens ({saved:,} saved)",
                "success",
            )
        else:
            self.notice(f"Compaction failed: {event.message}", "warning")
        if self.loop is not None:
            self.refresh_context()

    async def _turn_ended(self, event: ev.TurnEnded) -> None:
        await self._end_reply()
        for block in self._tools.values():
            block.set_status("stopped")
        self._tools.clear()
        for screen in list(self._approvals.values()):
            screen.dismiss(ev.ApprovalDecision(ev.ApprovalChoice.DENY))
        self._approvals.clear()
        if event.reason is ev.TurnEndReason.STOPPED:
            self.notice("■ stopped", "warning")
        elif event.reason is ev.TurnEndReason.ITERATION_CAP:
            self.notice("Stopped after the iteration cap; say 'continue' to go on.", "warning")
        self.refresh_queue()

    def notice(self, text: str, level: str = "info") -> None:
        self.run_worker(self.transcript.add(NoticeBlock(text, level)), group="notices")

    def refresh_queue(self) -> None:
        queued = list(self.loop.queued) if self.loop is not None else list(self._pending_inputs)
        self.query_one(QueuedView).show(queued)
        self.status.set(queued=len(queued))

    # --- input ----------------------------------------------------------------------------------

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.Paste) and not event.is_forwarded:
            prompt = self.screen_stack[0].query_one(PromptArea)
            if type_through.route(self, event, prompt) or type_through.from_block(self, event, prompt):
                return
        await super().on_event(event)

    async def on_prompt_area_submitted(self, message: PromptArea.Submitted) -> None:
        text = message.text
        if await self.run_slash(text):
            return
        self.transcript.follow()  # sending brings the view back to the live end
        starts_now = not (self.running() or self.loop.queued) if self.loop else not self._pending_inputs
        if starts_now:
            await self.show_early(text)  # it starts a turn (now, or once the session opens)
        if self.loop is None:
            self._pending_inputs.append(text)
        else:
            self.loop.submit(text)
        self.refresh_queue()

    async def show_early(self, text: str) -> None:
        """The user's message appears the moment it is sent, not when the loop reports the turn (the
        first one may wait for the session to open); TurnStarted then finds it here."""
        block = UserBlock(strip_runtime_block(text))
        self._early.append((text, block))
        await self.transcript.add(block)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if isinstance(event.option_list, Completer) and event.option.id:
            self.prompt.load_text(f"/{event.option.id} ")
            self.prompt.move_cursor(self.prompt.document.end)
            self.prompt.focus()

    async def on_transcript_earlier_wanted(self, message: Transcript.EarlierWanted) -> None:
        if self.loop is not None:
            await self.transcript.load_earlier(self.loop.transcript(), keep_view=message.keep_view)

    def running(self) -> bool:
        return self.loop is not None and self.loop.state in (ev.LoopState.RUN, ev.LoopState.COMPACT)

    def action_escape(self) -> None:
        completer = self.query_one(Completer)
        if completer.display:
            completer.hide()
        elif self.running():
            self.action_stop()
        else:
            self.prompt.clear()

    def action_stop(self) -> None:
        if self.loop is not None and self.running():
            self.status.set(state="stopping")
            self.run_worker(self.loop.stop(), group="stop")

    def action_focus_prompt(self) -> None:
        self.prompt.focus()

    async def action_ctrl_c(self) -> None:
        focused = self.focused
        if isinstance(focused, TextArea) and focused.selected_text:
            self.copy_to_clipboard(focused.selected_text)
            return
        now = time.monotonic()
        if now - self._last_ctrl_c <= EXIT_PRESS_WINDOW:
            await self.quit()
            return
        self._last_ctrl_c = now
        self.notify("Press Ctrl+C again to exit", timeout=EXIT_PRESS_WINDOW)

    async def quit(self) -> None:
        self._quitting = True
        if self._starting and not self._start_settled.is_set():
            # Exiting while the session opens (Ctrl+C twice right after start-up): let it open, so
            # it is closed properly and the resume command can name it; the keys keep flowing.
            self.run_worker(self._quit_once_open(), name="quit-once-open", group="quit")
            return
        await self.shutdown()
        self.exit(self.session_id)

    async def _quit_once_open(self) -> None:
        try:
            await asyncio.wait_for(self._start_settled.wait(), START_WAIT)
        except TimeoutError:
            self.log.warning("exiting before the session finished opening")
        if self.start_error is not None:
            return  # the failed start already ends the app with its own exit code
        await self.shutdown()
        self.exit(self.session_id)

    async def shutdown(self) -> None:
        if self._loop_closed or self.loop is None:
            return
        self._loop_closed = True
        try:
            await self.loop.aclose()
        except Exception as exc:  # closing must not hide the resume command
            self.log.error(f"closing the loop failed: {exc}")

    async def on_unmount(self) -> None:
        if self._remove_stop_signals is not None:
            self._remove_stop_signals()
        await self.shutdown()


def _state(state: Any) -> str:
    return state.value if isinstance(state, ev.LoopState) else str(state)


def _text_of(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    return content if isinstance(content, str) and content.strip() else None


def _json_arguments(arguments: dict[str, Any]) -> str:
    import json

    return json.dumps(arguments, ensure_ascii=False)


def run_tui(
    workspace: Workspace,
    settings: Settings,
    *,
    resume: str | None,
    continue_latest: bool,
    inline: bool,
    first_message: str | None = None,
) -> str | None:
    """Run the TUI until the user exits; returns the session id so the caller can print how to resume.
    ``first_message`` (`catbuddy "PROMPT"`) is sent as soon as the session opens."""
    app = CatbuddyApp(
        workspace, settings, resume=resume, continue_latest=continue_latest, first_message=first_message
    )
    result = app.run(inline=inline)
    if app.start_error is not None:
        if isinstance(app.start_error, CatbuddyError):
            raise app.start_error
        logging.getLogger(__name__).error("the session could not start", exc_info=app.start_error)
        message, _ = explain(app.start_error)
        log_file = workspace.home / "logs" / LOG_FILE
        raise CatbuddyError(message, f"The details are in {log_file}.") from app.start_error
    return result or app.session_id
