"""The one typed event stream the agent loop emits; the TUI and the headless runner both consume it.

Every event is a frozen dataclass with a ``kind`` string, so ``--stream-json`` can print
``{"kind": ..., **fields}`` a line each without knowing the classes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from enum import Enum, StrEnum
from typing import Any, ClassVar


class LoopState(StrEnum):
    IDLE = "idle"
    RUN = "running"
    COMPACT = "compacting"
    STOPPING = "stopping"


class TurnEndReason(StrEnum):
    DONE = "done"
    STOPPED = "stopped"
    ERROR = "error"
    ITERATION_CAP = "iteration_cap"


class ApprovalChoice(StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"  # remember `pattern` for the rest of the session
    DENY = "deny"
    DENY_WITH_NOTE = "deny_with_note"  # `note` goes back to the model


@dataclass(frozen=True)
class ApprovalDecision:
    choice: ApprovalChoice
    note: str = ""
    pattern: str = ""

    @property
    def allowed(self) -> bool:
        return self.choice in (ApprovalChoice.ALLOW_ONCE, ApprovalChoice.ALLOW_SESSION)


@dataclass
class Event:
    kind: ClassVar[str] = "event"
    ts: float = field(default_factory=time.time, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        data = {"kind": self.kind}
        for key, value in asdict(self).items():
            if key.startswith("_"):
                continue
            data[key] = value.value if isinstance(value, Enum) else value
        return data


@dataclass
class TurnStarted(Event):
    kind: ClassVar[str] = "turn_start"
    turn: int
    user_text: str


@dataclass
class StateChanged(Event):
    kind: ClassVar[str] = "state"
    old: LoopState
    new: LoopState


@dataclass
class TextDelta(Event):
    kind: ClassVar[str] = "text_delta"
    text: str


@dataclass
class AssistantMessage(Event):
    """A complete assistant message as it was stored (text and/or tool calls)."""

    kind: ClassVar[str] = "assistant_message"
    message: dict[str, Any]


@dataclass
class ToolCallStarted(Event):
    kind: ClassVar[str] = "tool_call_start"
    call_id: str
    name: str
    arguments: str
    summary: str = ""


@dataclass
class ToolCallFinished(Event):
    kind: ClassVar[str] = "tool_call_finish"
    call_id: str
    name: str
    result: str
    is_error: bool = False
    duration: float = 0.0
    display: str | None = None


@dataclass
class ApprovalRequested(Event):
    """The loop waits on ``future`` until a front end answers with an ApprovalDecision."""

    kind: ClassVar[str] = "approval_request"
    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str
    preview: str = ""  # a diff for edits, the command for exec
    suggested_pattern: str = ""
    _future: asyncio.Future[ApprovalDecision] | None = field(default=None, repr=False, compare=False)

    def answer(self, decision: ApprovalDecision) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(decision)

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data.pop("_future", None)
        return data


@dataclass
class UsageReported(Event):
    kind: ClassVar[str] = "usage"
    prompt_tokens: int
    completion_tokens: int
    counted_prompt_tokens: int
    calibration: float = 1.0


@dataclass
class ContextStatus(Event):
    """How full the window is, for the status bar: tokens used of the budget."""

    kind: ClassVar[str] = "context"
    used: int
    budget: int
    compact_at: int
    model: str


@dataclass
class GovernanceReported(Event):
    kind: ClassVar[str] = "governance"
    report: dict[str, Any]
    summary: str


@dataclass
class Notice(Event):
    kind: ClassVar[str] = "notice"
    text: str
    level: str = "info"  # info, warning, error


@dataclass
class Retrying(Event):
    kind: ClassVar[str] = "retry"
    attempt: int
    delay: float
    reason: str


@dataclass
class CompactionFinished(Event):
    kind: ClassVar[str] = "compaction"
    ok: bool
    folded_messages: int
    tokens_before: int
    tokens_after: int
    summary_tokens: int
    message: str = ""


@dataclass
class ErrorOccurred(Event):
    kind: ClassVar[str] = "error"
    message: str
    hint: str = ""


@dataclass
class TurnEnded(Event):
    kind: ClassVar[str] = "turn_end"
    reason: TurnEndReason
    text: str = ""
    iterations: int = 0
