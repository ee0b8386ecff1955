"""The agent loop's side of memory (docs/architecture.md §13): it feeds the entries journal and runs Dream.

A listener on the loop's bus: each successful compaction appends its summary as an entry, turns mark
activity, state changes say when the loop is idle. The loop calls ``session_ended`` when a session ends
(close, /new, /resume) so its unconsolidated turns become an entry, and ``dream`` for /dream. With
``background`` (the TUI), a watcher starts Dream after ``dream_idle_minutes`` without a turn, or soon after
start-up when entries are pending. Dream's model call never blocks input; its writes wait until no turn
runs and then land at once, so a turn never sees its system prompt change halfway.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.agent.bus import EventBus
from catbuddy.agent.events import (
    CompactionFinished,
    DreamChoice,
    DreamFinished,
    DreamProposed,
    Event,
    LoopState,
    Notice,
    SessionOpened,
    StateChanged,
    TurnEnded,
    TurnStarted,
)
from catbuddy.config import Settings
from catbuddy.llm.protocol import ProviderSource
from catbuddy.memory.dream import DreamResult, DreamStatus
from catbuddy.memory.journal import COMPACTION, SESSION, Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.session_entry import bound_entry, digest_session
from catbuddy.memory.status import memory_status
from catbuddy.session.conversation import Conversation
from catbuddy.workspace import Workspace

if TYPE_CHECKING:
    # The Dreamer is built (memory/factory.py) when Dream first runs: its chain costs ~25 ms at start-up.
    from catbuddy.memory.dreamer import Dreamer, DreamProposal

log = logging.getLogger(__name__)

WATCH_TICK = 15.0  # seconds between idle checks (less when the idle time is shorter)
STARTUP_DELAY = 2.0  # after start-up, before dreaming over entries of earlier sessions
PROGRESS = (DreamStatus.APPLIED, DreamStatus.UNCHANGED, DreamStatus.DECLINED)
FAILURE_REASON_CHARS = 100  # of a failure without a short reason, in the one-line notice
QUIET_WHEN_AUTO = (DreamStatus.NOTHING, DreamStatus.UNCHANGED, DreamStatus.BUSY, DreamStatus.STALE)


class MemoryKeeper:
    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        bus: EventBus,
        provider: ProviderSource,
        *,
        model: Callable[[], str],
        secrets: Sequence[str] = (),
        background: bool = False,
        interactive: bool = True,
        channel: str = "tui",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.bus = bus
        self.provider = provider
        self.model = model
        self.secrets = tuple(secrets)
        self.background = background and settings.memory.dream != "off"
        self.interactive = interactive
        self.channel = channel
        self.clock = clock
        self.journal = Journal(MemoryPaths.of(workspace))
        self.session_id = ""
        self.last_activity = clock()
        self._idle = asyncio.Event()
        self._idle.set()
        self._watcher: asyncio.Task[None] | None = None
        self._running: asyncio.Task[DreamResult] | None = None
        self._ran_since_activity = False
        self._answers: dict[str, asyncio.Future[DreamChoice]] = {}
        self._ids = itertools.count(1)
        self._problems_shown: set[str] = set()
        self._pending_key: tuple[Any, ...] | None = None
        self._pending_count = 0

    # --- the bus --------------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, SessionOpened):
            self.session_id = event.session_id
        elif isinstance(event, CompactionFinished) and event.ok and event.summary.strip():
            self._append(COMPACTION, bound_entry(event.summary, self.secrets), record_id=event.record_id)
        elif isinstance(event, TurnStarted | TurnEnded):
            self.last_activity = self.clock()
            self._ran_since_activity = False
        elif isinstance(event, StateChanged):
            if event.new is LoopState.IDLE:
                self._idle.set()
            else:
                self._idle.clear()

    def _append(self, kind: str, content: str, **extra: Any) -> None:
        try:
            self.journal.append(self.session_id, kind, content, **extra)
        except OSError as exc:
            log.warning("cannot append a memory entry: %s", exc)
            self.bus.emit(Notice(f"Could not record a memory entry: {exc}", "warning"))

    # --- sessions -------------------------------------------------------------------------------

    async def session_ended(self, conversation: Conversation | None) -> None:
        """The session's turns since its last compaction (and its last entry) become one entry."""
        if conversation is None or conversation.closed:
            return
        messages = [(entry.id, entry.message) for entry in conversation.history.entries]
        try:
            await asyncio.to_thread(self._write_session_entry, conversation.id, messages)
        except OSError as exc:
            log.warning("cannot append the session's memory entry: %s", exc)
            self.bus.emit(Notice(f"Could not record this session for memory: {exc}", "warning"))

    def _write_session_entry(self, session_id: str, messages: list[tuple[str, dict[str, Any]]]) -> None:
        last = self.journal.last_session_entry(session_id)
        through = last.extra.get("through") if last is not None else None
        digest = digest_session(messages, through if isinstance(through, str) else None, self.secrets)
        if digest is not None:
            self.journal.append(
                session_id, SESSION, digest.content, through=digest.through, turns=digest.turns
            )

    # --- life cycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self.background and self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def aclose(self) -> None:
        for future in self._answers.values():
            if not future.done():
                future.set_result(DreamChoice.LATER)
        for task in (self._watcher, self._running):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._watcher = self._running = None

    def status(self) -> dict[str, Any]:
        """Pending entries, the cursor and the last Dream (what /context shows)."""
        status = memory_status(self.workspace, self.settings)
        status["running"] = self._running is not None and not self._running.done()
        return status

    # --- running Dream --------------------------------------------------------------------------

    async def dream(self, *, manual: bool = True, dry_run: bool = False) -> DreamResult:
        """Run Dream now (``/dream``: also when paused) and report how it ended as events."""
        if self._running is not None and not self._running.done():
            result = DreamResult(DreamStatus.BUSY, "Dream is already running; its result shows when it ends.")
            if manual:
                self._report(result, manual)
            return result
        task = asyncio.get_running_loop().create_task(self._run(manual, dry_run))
        self._running = task
        return await task

    async def _run(self, manual: bool, dry_run: bool) -> DreamResult:
        dreamer = await asyncio.to_thread(self._dreamer)
        if manual and not dry_run:
            await asyncio.to_thread(dreamer.unpause)
        elif not manual and await asyncio.to_thread(dreamer.paused):
            result = DreamResult(DreamStatus.PAUSED, self._paused_text())
            self._report(result, manual)
            return result
        outcome = await dreamer.propose()
        if isinstance(outcome, DreamResult):
            result = outcome
        elif dry_run:
            result = dreamer.dry_run(outcome)
        else:
            try:
                result = await self._settle(dreamer, outcome)
            finally:
                outcome.lock.release()
        state = await asyncio.to_thread(dreamer.record, result)
        self._report(
            result,
            manual,
            paused_now=result.status is DreamStatus.FAILED
            and state.paused(self.settings.memory.max_dream_failures),
        )
        return result

    async def _settle(self, dreamer: Dreamer, proposal: DreamProposal) -> DreamResult:
        """Ask (``ask`` mode) and apply, both only while no turn runs."""
        if self.settings.memory.dream == "ask" and proposal.changed:
            if not self.interactive:
                result = dreamer.discard(proposal, declined=False)
                result.message = (
                    f'Dream proposes memory {proposal.counts}, but memory.dream = "ask" and nobody can answer '
                    "here; review and apply it with `catbuddy dream`."
                )
                return result
            await self._wait_idle()
            choice = await self._ask(proposal)
            if choice is not DreamChoice.APPLY:
                return dreamer.discard(proposal, declined=choice is DreamChoice.DECLINE)
        await self._wait_idle()
        # No await between the idle check and the writes: a turn cannot start in between.
        return dreamer.apply(proposal)

    async def _wait_idle(self) -> None:
        while self.bus.state is not LoopState.IDLE:
            self._idle.clear()
            await self._idle.wait()

    async def _ask(self, proposal: DreamProposal) -> DreamChoice:
        proposal_id = f"dream-{next(self._ids)}"
        future: asyncio.Future[DreamChoice] = asyncio.get_running_loop().create_future()
        self._answers[proposal_id] = future
        self.bus.emit(
            DreamProposed(proposal_id, proposal.diff(), proposal.counts, len(proposal.material.entries))
        )
        try:
            return await future
        finally:
            self._answers.pop(proposal_id, None)

    def answer(self, proposal_id: str, choice: DreamChoice | str) -> bool:
        """Answer a pending ``DreamProposed``; False when nothing waits on ``proposal_id``."""
        future = self._answers.get(proposal_id)
        if future is None or future.done():
            return False
        future.set_result(DreamChoice(choice))
        return True

    def _dreamer(self) -> Dreamer:
        from catbuddy.memory.factory import make_dreamer

        return make_dreamer(
            self.workspace, self.settings, self.provider, session_model=self.model(), secrets=self.secrets
        )

    # --- reporting ------------------------------------------------------------------------------

    def _paused_text(self) -> str:
        failures = self.settings.memory.max_dream_failures
        command = "/dream" if self.channel == "tui" else "`catbuddy dream`"
        return f"Automatic Dream is paused after {failures} failed runs in a row; run {command} to try again."

    def _report(self, result: DreamResult, manual: bool, *, paused_now: bool = False) -> None:
        self.bus.emit(
            DreamFinished(
                result.status.value,
                result.message,
                result.added,
                result.removed,
                result.updated,
                result.entries,
                result.change,
                manual,
            )
        )
        for problem in result.problems:
            if problem not in self._problems_shown:
                self._problems_shown.add(problem)
                self.bus.emit(Notice(f"memory: {problem}", "warning"))
        if result.status is DreamStatus.APPLIED:
            hint = "/memory diff" if self.channel == "tui" else "catbuddy memory diff"
            self.bus.emit(Notice(f"memory: {result.counts} — {hint}", "success"))
        elif result.status is DreamStatus.FAILED and not manual:
            # In the background: one line, the whole story in the log (a rejected answer quotes it).
            log.warning("automatic Dream failed: %s", result.message)
            reason = result.reason or _first_sentence(result.message)
            command = "/dream" if self.channel == "tui" else "`catbuddy dream`"
            text = f"Dream could not update memory: {reason} — {command} to retry, details in the log"
            if paused_now:
                text += ". " + self._paused_text()
            self.bus.emit(Notice(text, "warning"))
        elif result.status is DreamStatus.FAILED:
            text = f"Dream failed: {result.message}"
            if paused_now:
                text += " " + self._paused_text()
            self.bus.emit(Notice(text, "warning"))
        elif result.status is DreamStatus.PAUSED:
            if manual:
                self.bus.emit(Notice(result.message, "warning"))
        elif manual or result.status not in QUIET_WHEN_AUTO:
            self.bus.emit(Notice(f"memory: {result.message}", "info"))

    # --- the watcher ----------------------------------------------------------------------------

    def _idle_seconds(self) -> float:
        return self.settings.memory.dream_idle_minutes * 60

    async def _watch(self) -> None:
        idle = self._idle_seconds()
        tick = max(0.02, min(WATCH_TICK, idle / 4))
        await asyncio.sleep(min(STARTUP_DELAY, idle))
        due_now = await asyncio.to_thread(self._pending) > 0  # entries of earlier sessions
        while True:
            if (due_now or self._idle_long_enough()) and self.bus.state is LoopState.IDLE:
                due_now = False
                if await asyncio.to_thread(self._pending):
                    try:
                        result = await self.dream(manual=False)
                    except Exception:  # the watcher must outlive any one run
                        log.exception("background Dream failed")
                        result = DreamResult(DreamStatus.FAILED, "unexpected error")
                    # Keep going while runs make progress over a backlog; a proposal dropped because a
                    # file changed meanwhile is retried after the next idle period; anything else
                    # (a failure, "not now") waits for new activity first.
                    self._ran_since_activity = result.status not in (*PROGRESS, DreamStatus.STALE)
                    due_now = result.status in PROGRESS and await asyncio.to_thread(self._pending) > 0
                    if due_now:
                        continue
            await asyncio.sleep(tick)

    def _pending(self) -> int:
        """Pending entries, recounted only when the journal or the cursor file changed (a timer asks)."""
        key = (_stat(self.journal.paths.journal), _stat(self.journal.paths.cursor))
        if key != self._pending_key:
            self._pending_count, self._pending_key = self.journal.pending_count(), key
        return self._pending_count

    def _idle_long_enough(self) -> bool:
        return (
            not self._ran_since_activity
            and self.bus.state is LoopState.IDLE
            and self.clock() - self.last_activity >= self._idle_seconds()
        )


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)  # the inode: the cursor is replaced by a rename


def _first_sentence(message: str) -> str:
    line = " ".join(message.split()).split(". ")[0].rstrip(".")
    line = line[:1].lower() + line[1:]
    return line if len(line) <= FAILURE_REASON_CHARS else line[: FAILURE_REASON_CHARS - 1] + "…"
