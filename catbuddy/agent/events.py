"""The one typed event stream the agent loop emits; the TUI and the headless runner both consume it.

Events are plain data (docs/architecture.md §5): dataclasses of strings, numbers, enums, lists and
dicts, with a ``kind`` string. ``to_json()`` gives ``{"kind": ..., **fields}`` for ``--stream-json``,
and ``event_from_json`` turns such a line back into the same event, so a front end in another process
sees exactly what the TUI sees. Nothing in an event lets its receiver act on the loop: answers (an
approval, a stop) go back through methods of the loop.

An event is reported once, on the bus. The types marked ``record`` are also what the session keeps:
the loop's recorder writes each as an ``event`` record of the same kind with the same fields
(``record_fields``), so a record and its event cannot drift apart (docs/architecture.md §6). Recorded and
``scrubbed`` types are scrubbed of secrets by the bus before anyone sees them (``agent/bus.py``).
"""

from __future__ import annotations

import time
import typing
from dataclasses import asdict, dataclass, field, fields
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


class DreamChoice(StrEnum):
    APPLY = "apply"
    DECLINE = "decline"  # the entries are done with, nothing is written
    LATER = "later"  # nothing changes; proposed again later


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
    record: ClassVar[bool] = False  # kept in the session file as an event record of this kind
    scrubbed: ClassVar[bool] = False  # secrets masked before delivery (every recorded type is too)
    ts: float = field(default_factory=time.time, kw_only=True)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for key, value in asdict(self).items():
            data[key] = value.value if isinstance(value, Enum) else value
        return data

    def record_fields(self) -> dict[str, Any]:
        """The fields of its session record: every field but the kind (the record's own) and the time
        (records carry theirs)."""
        data = self.to_json()
        del data["kind"], data["ts"]
        return data


@dataclass
class SessionOpened(Event):
    """The first event of every run: which session this is (new or resumed) and where it lives."""

    kind: ClassVar[str] = "session"
    session_id: str
    resumed: bool
    model: str
    path: str = ""


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
class ReasoningDelta(Event):
    """Reasoning ("thinking") as it streams, before or between the answer's text; never part of it."""

    kind: ClassVar[str] = "reasoning_delta"
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
    summary: str = ""  # the tool's one line for the call (its key argument)
    tool_kind: str = ""  # the tool's ToolKind value: read, edit, exec, network, external


@dataclass
class ToolCallFinished(Event):
    kind: ClassVar[str] = "tool_call_finish"
    call_id: str
    name: str
    result: str
    is_error: bool = False  # the call failed (``meta``'s status is not ok)
    duration: float = 0.0
    display: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # the call's ToolMeta, as stored in the session


@dataclass
class ApprovalRequested(Event):
    """A call needs the user's yes or no. When ``answerable``, the loop waits until a front end calls
    ``AgentLoop.answer_approval(call_id, ...)``; otherwise (headless) it is refused at once and an
    ``ApprovalResolved`` follows."""

    kind: ClassVar[str] = "approval_request"
    call_id: str
    name: str
    arguments: dict[str, Any]
    summary: str
    preview: str = ""  # a diff for edits, the command for exec
    suggested_pattern: str = ""
    reason: str = ""  # why it asks, e.g. "runs `pytest`"
    answerable: bool = True
    sandbox: str = ""  # exec: the sandbox the command would run in (e.g. "workspace-write (bubblewrap)")
    preview_kind: str = ""  # the tool's PreviewKind value: command, diff or text
    remembers: str = ""  # what "allow for this session" remembers, in words ("git log, read-only forms")


@dataclass
class ApprovalResolved(Event):
    """How a call that was not simply allowed ended: ``decision`` is an ApprovalChoice value,
    "refused_headless" (nobody to ask) or "denied_by_rule" (catbuddy's safety rules, ``reason`` says which;
    no request came before it)."""

    kind: ClassVar[str] = "approval_resolved"
    record: ClassVar[bool] = True
    call_id: str
    name: str
    decision: str
    note: str = ""
    reason: str = ""


@dataclass
class UsageReported(Event):
    kind: ClassVar[str] = "usage"
    record: ClassVar[bool] = True
    prompt_tokens: int
    completion_tokens: int
    counted_prompt_tokens: int
    calibration: float = 1.0
    cached_tokens: int = 0  # prompt tokens the provider served from its prompt cache
    cache_write_tokens: int = 0  # prompt tokens written to the provider's cache (Anthropic-style)
    reasoning_tokens: int = 0  # completion tokens spent reasoning
    model: str = ""  # the model the call went to: a session may change model, and cost is per model


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
    record: ClassVar[bool] = True
    report: dict[str, Any]
    summary: str


@dataclass
class Notice(Event):
    kind: ClassVar[str] = "notice"
    scrubbed: ClassVar[bool] = True  # may quote a provider's error or a URL
    text: str
    level: str = "info"  # info, warning, error


@dataclass
class Retrying(Event):
    kind: ClassVar[str] = "retry"
    scrubbed: ClassVar[bool] = True
    attempt: int
    delay: float
    reason: str


@dataclass
class CompactionFinished(Event):
    """A compaction ended. When ``ok``, ``summary`` is the new pinned summary and ``record_id`` the id of
    its ``compaction`` record, so listeners (memory, a remote front end) need not read the session file."""

    kind: ClassVar[str] = "compaction"
    ok: bool
    folded_messages: int
    tokens_before: int
    tokens_after: int
    summary_tokens: int
    message: str = ""
    summary: str = ""
    record_id: str = ""


@dataclass
class CompactionUndone(Event):
    """``/compact undo`` ended. When ``ok``, compaction ``voided_id`` no longer counts and the working
    history is back to what it was before it (``summary_id``: the compaction now in force, if any)."""

    kind: ClassVar[str] = "compaction_undone"
    ok: bool
    message: str
    voided_id: str = ""
    summary_id: str = ""
    messages: int = 0  # messages in the working history now


@dataclass
class CheckpointSaved(Event):
    """A turn changed files and its checkpoint is journaled: ``catbuddy undo`` can take it back."""

    kind: ClassVar[str] = "checkpoint"
    record: ClassVar[bool] = True
    turn_id: str
    message_id: str  # the user message the turn answered
    files: int


@dataclass
class FilesRestored(Event):
    """An undo, redo or rewind put files back (``action``: "undo", "redo" or "rewind")."""

    kind: ClassVar[str] = "files_restored"
    record: ClassVar[bool] = True
    action: str
    turns: list[str]
    paths: list[str]
    conflicts_kept: list[str] = field(default_factory=list)


@dataclass
class DreamProposed(Event):
    """``memory.dream = "ask"``: Dream's diff waits for ``AgentLoop.answer_dream(proposal_id, choice)``."""

    kind: ClassVar[str] = "dream_proposal"
    proposal_id: str
    diff: str
    counts: str  # "+2 −1 ~1"
    entries: int


@dataclass
class DreamFinished(Event):
    """A Dream run ended; ``status`` is a ``memory.dream.DreamStatus`` value, ``change`` the version log's
    change id of what it wrote."""

    kind: ClassVar[str] = "dream"
    status: str
    message: str
    added: int = 0
    removed: int = 0
    updated: int = 0
    entries: int = 0
    change: int | None = None
    manual: bool = False


@dataclass
class ErrorOccurred(Event):
    kind: ClassVar[str] = "error"
    record: ClassVar[bool] = True
    message: str
    hint: str = ""
    code: str = ""  # a machine-readable cause, e.g. "context_length_exceeded"


@dataclass
class ModelChanged(Event):
    """``/model``: the model of the next turns."""

    kind: ClassVar[str] = "model"
    record: ClassVar[bool] = True
    model: str
    reasoning_effort: str = ""  # the effort its requests ask for ("": none sent)


@dataclass
class ApprovalModeChanged(Event):
    kind: ClassVar[str] = "approval_mode"
    record: ClassVar[bool] = True
    mode: str


@dataclass
class TurnStopped(Event):
    """The user stopped turn ``turn`` (Esc, /stop, Ctrl+C, SIGTERM); ``TurnEnded`` follows."""

    kind: ClassVar[str] = "stop"
    record: ClassVar[bool] = True
    turn: int


@dataclass
class IterationCapReached(Event):
    kind: ClassVar[str] = "iteration_cap"
    record: ClassVar[bool] = True
    limit: int


@dataclass
class ContextTooLong(Event):
    """The provider refused a request as too long; the loop compacts (or counts stricter) and retries once."""

    kind: ClassVar[str] = "context_length_exceeded"
    record: ClassVar[bool] = True
    message: str


@dataclass
class CompactionAttemptFailed(Event):
    """A compaction failed and left the history as it was; ``failures`` in a row so far."""

    kind: ClassVar[str] = "compaction_failed"
    record: ClassVar[bool] = True
    reason: str
    failures: int


@dataclass
class TurnEnded(Event):
    kind: ClassVar[str] = "turn_end"
    reason: TurnEndReason
    text: str = ""
    iterations: int = 0


# --- plan and subagents (docs/architecture.md §5c) ------------------------------------------------


@dataclass
class PlanUpdated(Event):
    """``update_plan`` set a new plan (``steps``: ``{"step", "status"}`` dicts, in order); also at start-up
    and on /resume when the session has one, so a front end shows the plan it resumes."""

    kind: ClassVar[str] = "plan"
    steps: list[dict[str, str]]
    explanation: str = ""
    call_id: str = ""


@dataclass
class PlanModeChanged(Event):
    """Plan mode on (only reading tools; the model plans) or off."""

    kind: ClassVar[str] = "plan_mode"
    record: ClassVar[bool] = True
    active: bool


@dataclass
class SubagentStarted(Event):
    kind: ClassVar[str] = "subagent_start"
    call_id: str  # the parent's `task` call
    agent: str
    description: str
    session: str  # the child's session id
    model: str = ""


@dataclass
class SubagentProgress(Event):
    """A running child started a tool call: what the parent's `task` call is doing now (not recorded)."""

    kind: ClassVar[str] = "subagent_progress"
    call_id: str  # the parent's `task` call
    agent: str
    text: str  # the child's call: its tool and key argument


@dataclass
class SubagentFinished(Event):
    """A child ended. Kept in the parent's session file, linked to the parent's call by ``call_id``:
    ``transcript`` is the child's messages as sent, ``usage`` its provider usage summed (it rolls up into
    the session's); ``spent_tokens`` what its requests carried against ``returned_tokens`` of answer."""

    kind: ClassVar[str] = "subagent"
    record: ClassVar[bool] = True
    call_id: str
    agent: str
    description: str
    session: str
    status: str  # done | incomplete
    reason: str = ""
    turns: int = 0
    spent_tokens: int = 0
    returned_tokens: int = 0
    answer: str = ""  # the whole final answer (the parent's result may carry only its head)
    usage: dict[str, int] = field(default_factory=dict)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""  # the child's model: its usage is priced at that model's price


def _event_classes() -> dict[str, type[Event]]:
    found: dict[str, type[Event]] = {}
    pending = list(Event.__subclasses__())
    while pending:
        cls = pending.pop()
        found[cls.kind] = cls
        pending += cls.__subclasses__()
    return found


EVENT_TYPES: dict[str, type[Event]] = _event_classes()


def event_from_json(data: dict[str, Any]) -> Event:
    """The event a ``to_json()`` dict describes (the inverse of ``to_json``). Raises ValueError for an
    unknown kind or missing fields, so a front end in another process can report a bad line."""
    cls = EVENT_TYPES.get(str(data.get("kind")))
    if cls is None:
        raise ValueError(f"unknown event kind {data.get('kind')!r}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for item in fields(cls):
        if item.name not in data:
            continue
        value = data[item.name]
        hint = hints.get(item.name)
        if isinstance(hint, type) and issubclass(hint, Enum) and value is not None:
            value = hint(value)
        values[item.name] = value
    try:
        return cls(**values)
    except TypeError as exc:
        raise ValueError(f"a {cls.kind} event needs other fields: {exc}") from None
