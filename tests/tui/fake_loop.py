"""A stand-in AgentLoop for Pilot tests of pure UI pieces (snapshots need fixed ids and no clocks).

It implements the AgentLoop surface the TUI uses; a test drives it by emitting events, as the real
loop would. End-to-end behaviour is tested against the real AgentLoop and the scripted server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catbuddy.agent import events as ev


@dataclass
class FakeLayer:
    name: str
    tokens: int
    sources: list[str] = field(default_factory=list)


@dataclass
class FakeReport:
    model: str = "scripted"
    layers: list[FakeLayer] = field(
        default_factory=lambda: [
            FakeLayer("identity", 310),
            FakeLayer("bootstrap", 1_240),
            FakeLayer("memory", 180),
            FakeLayer("skills", 420),
            FakeLayer("runtime", 60),
        ]
    )
    system_tokens: int = 2_210
    tools_tokens: int = 1_530
    summary_tokens: int = 0
    history_tokens: int = 8_400
    history_messages: int = 24
    used: int = 12_140
    budget: int = 26_624
    compact_threshold_tokens: int = 21_299
    compact_message_threshold: int = 50
    calibration: float = 1.0
    context_window: int = 32_768
    max_output_tokens: int = 4_096
    sandbox: str = ""
    folded_messages: int = 0
    usage: Any = None
    price: Any = None


@dataclass
class FakeSession:
    id: str
    created_at: str
    last_activity: str
    message_count: int
    first_user_message: str
    size_bytes: int
    model: str = "scripted"


class FakeLoop:
    def __init__(self, workspace: Any, settings: Any, **kwargs: Any) -> None:
        self.workspace = workspace
        self.settings = settings
        self.kwargs = kwargs
        self.listeners: list[Any] = []
        self.state = ev.LoopState.IDLE
        self.session_id = "s-20250101-0001"
        self.model = settings.model or "scripted"
        self.approval_mode = settings.approval
        self.queued: list[str] = []
        self.submitted: list[str] = []
        self.messages: list[dict[str, Any]] = []
        self.sessions: list[FakeSession] = []
        self.report = FakeReport()
        self.stopped = 0
        self.compacted: list[str | None] = []
        self.undone = 0
        self.resumed: list[str] = []
        self.closed = False
        self.turn = 0
        self.warmed = False
        self.answers: list[tuple[str, ev.ApprovalChoice, str, str]] = []
        self.dreams: list[bool] = []
        self.dream_answers: list[tuple[str, ev.DreamChoice]] = []

    async def start(self) -> None:
        return None

    async def warm_up(self) -> None:
        self.warmed = True

    def answer_approval(self, call_id: str, choice: Any, note: str = "", pattern: str = "") -> bool:
        self.answers.append((call_id, ev.ApprovalChoice(choice), note, pattern))
        return True

    def context_status(self) -> ev.ContextStatus:
        report = self.report
        return ev.ContextStatus(
            used=report.used,
            budget=report.budget,
            compact_at=report.compact_threshold_tokens,
            model=self.model,
        )

    def add_listener(self, callback: Any) -> None:
        self.listeners.append(callback)

    def remove_listener(self, callback: Any) -> None:
        self.listeners.remove(callback)

    def emit(self, event: ev.Event) -> None:
        for callback in list(self.listeners):
            callback(event)

    def set_state(self, state: ev.LoopState) -> None:
        old, self.state = self.state, state
        self.emit(ev.StateChanged(old=old, new=state))

    def set_model(self, name: str) -> None:
        if not name.strip():
            raise ValueError("model name must not be empty")
        self.model = name

    plan_mode = False

    def set_plan_mode(self, active: bool) -> None:
        if self.plan_mode != active:
            self.plan_mode = active
            self.emit(ev.PlanModeChanged(active))

    def accept_plan(self) -> Any:
        self.set_plan_mode(False)
        return None

    def current_plan(self) -> Any:
        return None

    def delegation_report(self) -> dict[str, Any]:
        return {"plan": None, "plan_text": "", "plan_versions": 0, "subagents": []}

    def set_approval_mode(self, mode: str) -> None:
        self.approval_mode = mode

    def submit(self, text: str) -> None:
        self.submitted.append(text)
        if self.state is ev.LoopState.IDLE:
            self.begin_turn(text)
        else:
            self.queued.append(text)

    def begin_turn(self, text: str) -> None:
        self.turn += 1
        self.messages.append({"role": "user", "content": text + "\n\n[runtime: time=fixed]"})
        self.set_state(ev.LoopState.RUN)
        self.emit(ev.TurnStarted(turn=self.turn, user_text=text))

    def reply(self, text: str) -> None:
        """Finish the running turn with a text reply (streamed in a few deltas)."""
        for start in range(0, len(text), 16):
            self.emit(ev.TextDelta(text=text[start : start + 16]))
        message = {"role": "assistant", "content": text}
        self.messages.append(message)
        self.emit(ev.AssistantMessage(message=message))
        self.end_turn(ev.TurnEndReason.DONE, text)

    def end_turn(self, reason: ev.TurnEndReason, text: str = "") -> None:
        self.emit(ev.TurnEnded(reason=reason, text=text))
        self.set_state(ev.LoopState.IDLE)
        if self.queued:
            self.begin_turn(self.queued.pop(0))

    async def stop(self) -> None:
        self.stopped += 1
        if self.state is not ev.LoopState.IDLE:
            self.set_state(ev.LoopState.STOPPING)
            self.emit(ev.TurnEnded(reason=ev.TurnEndReason.STOPPED))
            self.set_state(ev.LoopState.IDLE)

    async def compact(self, instructions: str | None = None) -> ev.CompactionFinished:
        self.compacted.append(instructions)
        event = ev.CompactionFinished(
            ok=True, folded_messages=12, tokens_before=9_000, tokens_after=2_100, summary_tokens=640
        )
        self.emit(event)
        return event

    async def undo_compaction(self) -> ev.CompactionUndone:
        self.undone += 1
        if not self.compacted:
            event = ev.CompactionUndone(False, "Nothing to undo: this session has no compaction in force.")
        else:
            self.compacted.pop()
            event = ev.CompactionUndone(True, "Undid compaction c000001: the working history is back to 40 messages.", "c000001")
        self.emit(event)
        return event

    # /undo, /redo, /rewind, /fork: a plan with one conflict when ``conflict`` is set
    undo_plan: Any = None
    restored: list[tuple[str, bool]] = []
    rewound: list[str] = []
    forks: list[str | None] = []

    async def plan_restore(self, action: str, message_id: str | None = None) -> Any:
        return self.undo_plan

    async def restore_files(self, restore: Any, action: str, *, overwrite: bool = False) -> list[str]:
        self.restored.append((action, overwrite))
        return [p for p in restore.paths if overwrite or p not in restore.conflicts]

    async def rewind_conversation(self, message_id: str) -> int:
        self.rewound.append(message_id)
        cut = int(message_id[1:])
        self.messages = self.messages[: cut - 1]
        return len(self.messages)

    async def fork(self, at: str | None = None) -> str:
        self.forks.append(at)
        return "s-20250101-0009"

    async def new_session(self) -> None:
        self.session_id = "s-20250101-0002"
        self.messages = []

    async def resume(self, session_id: str) -> None:
        known = {session.id for session in self.sessions}
        if session_id not in known:
            raise LookupError(f"no session {session_id}")
        self.resumed.append(session_id)
        self.session_id = session_id
        self.messages = [
            {"role": "user", "content": f"first message of {session_id}"},
            {"role": "assistant", "content": "an earlier answer"},
        ]

    def transcript(self) -> list[Any]:
        from catbuddy.session.history import HistoryEntry

        return [HistoryEntry(f"m{index:06d}", message) for index, message in enumerate(self.messages, 1)]

    def context_report(self) -> FakeReport:
        return self.report

    def list_sessions(self) -> list[FakeSession]:
        return list(self.sessions)

    async def dream(self, *, dry_run: bool = False) -> Any:
        from catbuddy.memory.dream import DreamResult, DreamStatus

        self.dreams.append(dry_run)
        result = DreamResult(
            DreamStatus.NOTHING, "Nothing to dream about: no new memory entries since the last Dream."
        )
        self.emit(ev.DreamFinished(result.status.value, result.message, manual=True))
        self.emit(ev.Notice(f"memory: {result.message}"))
        return result

    def answer_dream(self, proposal_id: str, choice: Any) -> bool:
        self.dream_answers.append((proposal_id, ev.DreamChoice(choice)))
        return True

    def memory_status(self) -> dict[str, Any]:
        return {
            "mode": "auto",
            "pending_entries": 2,
            "cursor": 5,
            "failures": 0,
            "paused": False,
            "last_dream": None,
        }

    async def aclose(self) -> None:
        self.closed = True
