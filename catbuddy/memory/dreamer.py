"""A Dream run: pending entries + both MEMORY.md files → the model's operations → validated → written.

Two steps, so a front end can show the diff and apply it between turns (docs/architecture.md §13):
``propose`` takes the cross-process lock, reads, asks the model (one retry with the reason when the answer
is invalid) and returns a ``DreamProposal``; ``apply`` writes the files (each version kept first), and only
then moves the cursor. Every other ending (``discard``, a failure) releases the lock and leaves the
cursor where it was, so no entry is lost to a failed call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from catbuddy.errors import CatbuddyError
from catbuddy.memory.apply import Checked, FilePlan, Limits, check_file
from catbuddy.memory.document import MemoryDoc
from catbuddy.memory.dream import DreamResult, DreamStatus, counts_text, entries_text
from catbuddy.memory.files import locked, read_or_none
from catbuddy.memory.journal import Journal, now_iso
from catbuddy.memory.lock import DreamBusy, DreamLock
from catbuddy.memory.operations import parse_answer
from catbuddy.memory.paths import FILE_KEYS, GLOBAL, PROJECT, MemoryPaths
from catbuddy.memory.prompt import (
    DreamMaterial,
    Message,
    context_file,
    request_message,
    retry_messages,
    select_entries,
    system_message,
)
from catbuddy.memory.state import DreamState, LastDream
from catbuddy.memory.versions import MemoryVersions
from catbuddy.redact import mask_secrets
from catbuddy.text import unified_diff
from catbuddy.workspace import Workspace, shipped_default

DREAM_SOURCE = "dream"
REPLY_TOKENS = 4_096  # the answer is a list of short lines
MIN_ENTRY_TOKENS = 500  # below this the window is too small to dream in
REQUEST_FRAME = 16  # message framing and reply priming, generously

Complete = Callable[[list[Message], int], Awaitable[str]]


class AnswerCutOff(CatbuddyError):
    """The model stopped at the reply limit: its answer may end in a half-written fact."""

    def __init__(self, partial: str, limit: int) -> None:
        super().__init__(f"the answer was cut off at the {limit:,}-token reply limit")
        self.partial = partial


@dataclass(frozen=True)
class DreamConfig:
    model: str
    limits: Limits
    entry_tokens: int
    context_window: int
    max_output_tokens: int
    safety_margin: int
    secrets: tuple[str, ...] = ()
    global_user_profile: bool = False
    max_failures: int = 3


@dataclass
class DreamProposal:
    material: DreamMaterial
    plans: dict[str, FilePlan]
    through: int  # the cursor of the newest entry read
    attempts: int
    lock: DreamLock
    problems: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.session_id for e in self.material.entries if e.session_id))

    @property
    def changed(self) -> list[FilePlan]:
        return [plan for plan in self.plans.values() if plan.changed]

    @property
    def added(self) -> int:
        return sum(plan.added for plan in self.changed)

    @property
    def removed(self) -> int:
        return sum(plan.deleted for plan in self.changed)

    @property
    def updated(self) -> int:
        return sum(plan.updated for plan in self.changed)

    @property
    def counts(self) -> str:
        return counts_text(self.added, self.removed, self.updated)

    def diff(self) -> str:
        return "".join(
            unified_diff(plan.before or "", plan.after, f"{plan.key}/MEMORY.md") for plan in self.changed
        )

    def result(self, status: DreamStatus, message: str, change: int | None = None) -> DreamResult:
        return DreamResult(
            status,
            message,
            self.added,
            self.removed,
            self.updated,
            len(self.material.entries),
            self.diff(),
            change,
            list(self.problems),
        )


class Dreamer:
    def __init__(
        self, workspace: Workspace, config: DreamConfig, complete: Complete, count_text: Callable[[str], int]
    ):
        self.workspace = workspace
        self.paths = MemoryPaths.of(workspace)
        self.config = config
        self.complete = complete
        self.count_text = count_text
        self.journal = Journal(self.paths)
        self.versions = MemoryVersions(self.paths)

    # --- state --------------------------------------------------------------------------------------

    def state(self) -> DreamState:
        return DreamState.load(self.paths.state)

    def paused(self) -> bool:
        return self.state().paused(self.config.max_failures)

    def unpause(self) -> None:
        """A Dream run by hand: the failures so far no longer pause anything."""
        state = self.state()
        if state.failures:
            state.failures = 0
            state.save(self.paths.state)

    def record(self, result: DreamResult) -> DreamState:
        """Remember how a run ended (dry runs, busy and deferred runs leave no trace)."""
        state = self.state()
        if result.status in (DreamStatus.DRY_RUN, DreamStatus.BUSY, DreamStatus.DEFERRED, DreamStatus.PAUSED):
            return state
        if result.status is DreamStatus.FAILED:
            state.failures += 1
        elif result.status is not DreamStatus.STALE:
            state.failures = 0
        if result.status is not DreamStatus.NOTHING:
            state.last = LastDream(
                now_iso(),
                result.status.value,
                result.message,
                result.added,
                result.removed,
                result.updated,
                result.entries,
                result.change,
            )
        state.save(self.paths.state)
        return state

    # --- proposing ----------------------------------------------------------------------------------

    async def propose(self) -> DreamProposal | DreamResult:
        lock = DreamLock(self.paths.lock)
        try:
            lock.acquire()
        except DreamBusy as exc:
            return DreamResult(DreamStatus.BUSY, str(exc))
        try:
            outcome = await self._propose(lock)
        except BaseException:
            lock.release()
            raise
        if isinstance(outcome, DreamResult):
            lock.release()
        return outcome

    async def _propose(self, lock: DreamLock) -> DreamProposal | DreamResult:
        gathered = await asyncio.to_thread(self._gather)
        if isinstance(gathered, DreamResult):
            return gathered
        material, problems, system, request = gathered
        if not material.entries:
            return DreamResult(
                DreamStatus.NOTHING,
                "Nothing to dream about: no new memory entries since the last Dream.",
                problems=problems,
            )
        messages = [system, request]
        reply_tokens = min(REPLY_TOKENS, self.config.max_output_tokens)
        rejected: list[str] = []
        for attempt in (1, 2):
            try:
                answer = await self.complete(messages, reply_tokens)
            except AnswerCutOff as cut:
                reason = f"{cut}; answer with fewer, shorter lines"
                rejected.append(reason)
                messages = retry_messages(messages, mask_secrets(cut.partial, self.config.secrets), reason)
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # provider errors end the run, never the app
                reason = getattr(exc, "message", None) or str(exc) or type(exc).__name__
                return DreamResult(
                    DreamStatus.FAILED,
                    f"The Dream request failed: {mask_secrets(reason, self.config.secrets)}. Nothing was written.",
                    entries=len(material.entries),
                    problems=problems,
                    reason="the request to the model failed",
                )
            checked, reason = self._check(answer, material)
            if not reason:
                plans = {key: item.plan for key, item in checked.items()}
                through = material.entries[-1].cursor
                return DreamProposal(material, plans, through, attempt, lock, problems)
            rejected.append(reason)
            messages = retry_messages(messages, mask_secrets(answer, self.config.secrets), reason)
        return DreamResult(
            DreamStatus.FAILED,
            "The model's Dream answer was rejected twice; nothing was written and the entries wait for the next "
            f"Dream. Last reason: {rejected[-1]}",
            entries=len(material.entries),
            problems=problems,
            reason="the model's answer was not in the expected form",
        )

    def _gather(self) -> tuple[DreamMaterial, list[str], Message, Message] | DreamResult:
        """Read everything the request needs (blocking: run in a thread)."""
        pending = self.journal.pending()
        problems = list(pending.problems)
        texts = {key: read_or_none(self.paths.memory_file(key)) for key in FILE_KEYS}
        docs = {key: MemoryDoc.parse(text) for key, text in texts.items()}
        profile = self.config.global_user_profile
        user_md = context_file(
            read_or_none(self.workspace.bootstrap_path("USER.md", profile)), shipped_default("USER.md")
        )
        soul_md = context_file(
            read_or_none(self.workspace.bootstrap_path("SOUL.md")), shipped_default("SOUL.md")
        )
        system = system_message(self.config.limits.max_lines, self.config.limits.max_bytes)
        empty = DreamMaterial(texts, docs, user_md, soul_md, [], 0)
        fixed = (
            self.count_text(system["content"])
            + self.count_text(request_message(empty)["content"])
            + REQUEST_FRAME
        )
        room = (
            self.config.context_window
            - min(REPLY_TOKENS, self.config.max_output_tokens)
            - self.config.safety_margin
            - fixed
        )
        budget = min(self.config.entry_tokens, room)
        if pending.entries and budget < MIN_ENTRY_TOKENS:
            return DreamResult(
                DreamStatus.FAILED,
                f"The {self.config.context_window:,}-token window of {self.config.model} leaves no room for a Dream "
                "request (the memory files take the rest); set memory.dream_model to a model with a larger window.",
                problems=problems,
            )
        entries, waiting = select_entries(pending.entries, budget, self.count_text)
        material = DreamMaterial(texts, docs, user_md, soul_md, entries, waiting)
        return material, problems, system, request_message(material)

    def _check(self, answer: str, material: DreamMaterial) -> tuple[dict[str, Checked], str]:
        parsed = parse_answer(answer)
        if not parsed.ok:
            return {}, "; ".join(parsed.problems)
        checked = {
            key: check_file(
                key,
                self.paths.memory_file(key),
                material.texts[key],
                parsed.changes(key),
                self.config.limits,
                self.config.secrets,
            )
            for key in (GLOBAL, PROJECT)
        }
        problems = [p for item in checked.values() for p in item.problems]
        return checked, "; ".join(problems)

    # --- applying -----------------------------------------------------------------------------------

    def apply(self, proposal: DreamProposal) -> DreamResult:
        """Write the proposal (each file's previous version kept first), then move the cursor. Small
        writes, done at once: the caller makes sure no turn is running."""
        try:
            # The global file is shared by every project's Dream: check and write under one lock.
            with locked(self.paths.write_lock):
                for key, plan in proposal.plans.items():
                    if read_or_none(self.paths.memory_file(key)) != plan.before:
                        return proposal.result(
                            DreamStatus.STALE,
                            f"{plan.path} changed while Dream was thinking; nothing was written, "
                            "Dream will try again.",
                        )
                change = None
                if proposal.changed:
                    written = self.versions.write(
                        {plan.key: plan.after for plan in proposal.changed},
                        source=DREAM_SOURCE,
                        sessions=proposal.sessions,
                    )
                    change = written.id if written else None
            self.journal.set_cursor(proposal.through)
        except OSError as exc:
            return proposal.result(
                DreamStatus.FAILED, f"Writing memory failed: {exc}. The cursor did not move."
            )
        finally:
            proposal.lock.release()
        if change is None:
            return proposal.result(
                DreamStatus.UNCHANGED,
                f"Dream read {entries_text(len(proposal.material.entries))}; nothing new to remember.",
            )
        return proposal.result(
            DreamStatus.APPLIED,
            f"Dream read {entries_text(len(proposal.material.entries))}: memory {proposal.counts} (change #{change}).",
            change,
        )

    def discard(self, proposal: DreamProposal, *, declined: bool) -> DreamResult:
        """The user said no (the entries are done with: the cursor moves) or not now (nothing changes)."""
        try:
            if declined:
                self.journal.set_cursor(proposal.through)
                return proposal.result(
                    DreamStatus.DECLINED,
                    f"Dream's proposal declined; its {entries_text(len(proposal.material.entries))} are skipped.",
                )
            return proposal.result(
                DreamStatus.DEFERRED, "Dream's proposal set aside; it will be proposed again later."
            )
        finally:
            proposal.lock.release()

    def dry_run(self, proposal: DreamProposal) -> DreamResult:
        proposal.lock.release()
        if not proposal.changed:
            return proposal.result(DreamStatus.DRY_RUN, "Dry run: the model's answer changes nothing.")
        return proposal.result(
            DreamStatus.DRY_RUN, f"Dry run: Dream would change memory {proposal.counts}; nothing was written."
        )
