"""What a tool call did, as data: its status, exit code, duration, the paths it changed and the facts
the compaction ledger keeps (docs/architecture.md §5, §6, §8).

Every layer reads it — the agent writes it on the tool message's session record (beside the content,
never sent to a provider), the ledger builds from it, the TUI, ``catbuddy sessions show`` and
``--stream-json`` show it — so it lives here, below all of them, as plain data with a JSON form.
Reading is tolerant: a record written before this existed, or one damaged on disk, reads as
``ToolStatus.UNKNOWN`` with whatever else could be read; it never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

SUMMARY_CHARS = 160  # a result summary is one line


class ToolStatus(StrEnum):
    OK = "ok"
    ERROR = "error"  # the tool failed, the command exited non-zero, or the call was malformed
    REFUSED = "refused"  # catbuddy's rules refused it (deny rules, headless, over a bound)
    DENIED = "denied"  # the user said no
    STOPPED = "stopped"  # the user stopped the turn while it ran (or before it could)
    TIMED_OUT = "timed_out"
    UNKNOWN = "unknown"  # nothing recorded (a session written before results carried meta)

    @property
    def failed(self) -> bool:
        return self not in (ToolStatus.OK, ToolStatus.UNKNOWN)

    @property
    def label(self) -> str:
        """How a front end says it: "ok", "timed out", …"""
        return self.value.replace("_", " ")


class Change(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"


class FactKind(StrEnum):
    """What a call tells the compaction ledger besides the paths it changed (context/compaction/ledger.py)."""

    READ = "read"  # a file read: value is its path
    COMMAND = "command"  # a command run: value is the command line, detail a failing one's output tail
    TEST = "test"  # a test command: value is the command line, detail the runner's verdict line
    URL = "url"  # a page fetched
    SEARCH = "search"  # a web search: value is the query
    SKILL = "skill"  # a skill (or one of its files) loaded
    EXTERNAL = "external"  # a call to a tool outside catbuddy (MCP): value is the tool's name


@dataclass(frozen=True)
class PathChange:
    """One file a call created, modified or deleted; line counts are None when they cannot be known
    (an overwrite of content that was never read, a deletion by a command)."""

    path: str  # as the model writes it: relative to the work root when inside it
    change: Change
    added: int | None = None
    removed: int | None = None
    moved_to: str = ""  # a deletion that was a move (`mv a b`)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "change": self.change.value}
        if self.added is not None:
            data["added"] = self.added
        if self.removed is not None:
            data["removed"] = self.removed
        if self.moved_to:
            data["moved_to"] = self.moved_to
        return data

    @classmethod
    def from_json(cls, data: Any) -> PathChange | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("path"), str):
            return None
        try:
            change = Change(str(data.get("change")))
        except ValueError:
            return None
        moved = data.get("moved_to")
        return cls(data["path"], change, _count(data.get("added")), _count(data.get("removed")),
                   moved if isinstance(moved, str) else "")  # fmt: skip

    def describe(self) -> str:
        """``modified src/a.py +3 −1``, ``deleted old.txt → new.txt``."""
        if self.change is Change.DELETED:
            return f"deleted {self.path}" + (f" → {self.moved_to}" if self.moved_to else "")
        counts = "".join(
            f" {sign}{n}" for sign, n in (("+", self.added), ("−", self.removed)) if n is not None and n
        )
        return f"{self.change.value} {self.path}{counts}"


@dataclass(frozen=True)
class LedgerFact:
    kind: FactKind | str  # a kind this version does not know is kept and ignored
    value: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"kind": str(self.kind), "value": self.value}
        if self.detail:
            data["detail"] = self.detail
        return data

    @classmethod
    def from_json(cls, data: Any) -> LedgerFact | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
            return None
        if not isinstance(data.get("value"), str):
            return None
        detail = data.get("detail")
        kind = data["kind"]
        return cls(FactKind(kind) if kind in FactKind._value2member_map_ else kind, data["value"],
                   detail if isinstance(detail, str) else "")  # fmt: skip


@dataclass
class ToolMeta:
    """The structured outcome of one tool call."""

    status: ToolStatus = ToolStatus.OK
    summary: str = ""  # the tool's one line about what it did ("exit 1", "120 lines", "refused")
    exit_code: int | None = None  # a command's (negative: killed by that signal)
    duration: float | None = None  # seconds
    paths: list[PathChange] = field(default_factory=list)  # what the call changed on disk
    facts: list[LedgerFact] = field(default_factory=list)
    malformed: str = ""  # what was wrong with a call the model got wrong ("unknown tool", …)
    extra: dict[str, Any] = field(default_factory=dict)  # tool-specific (lines read, sandbox, engine, …)

    @property
    def failed(self) -> bool:
        return self.status.failed

    def to_json(self) -> dict[str, Any]:
        """The stored form: empty fields left out, so a record stays small."""
        data: dict[str, Any] = {"status": self.status.value}
        if self.summary:
            data["summary"] = self.summary
        if self.exit_code is not None:
            data["exit_code"] = self.exit_code
        if self.duration is not None:
            data["duration"] = self.duration
        if self.paths:
            data["paths"] = [change.to_json() for change in self.paths]
        if self.facts:
            data["facts"] = [fact.to_json() for fact in self.facts]
        if self.malformed:
            data["malformed"] = self.malformed
        if self.extra:
            data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_json(cls, data: Any) -> ToolMeta:
        """The meta a record holds; ``None`` (no meta stored) or garbage reads as UNKNOWN."""
        if not isinstance(data, Mapping):
            return cls(ToolStatus.UNKNOWN)
        try:
            status = ToolStatus(str(data.get("status")))
        except ValueError:
            status = ToolStatus.UNKNOWN
        duration = data.get("duration")
        extra = data.get("extra")
        return cls(
            status=status,
            summary=_text(data.get("summary")),
            exit_code=_int(data.get("exit_code")),
            duration=float(duration) if isinstance(duration, int | float) and _number(duration) else None,
            paths=[p for p in map(PathChange.from_json, _list(data.get("paths"))) if p is not None],
            facts=[f for f in map(LedgerFact.from_json, _list(data.get("facts"))) if f is not None],
            malformed=_text(data.get("malformed")),
            extra=dict(extra) if isinstance(extra, Mapping) else {},
        )


def describe_outcome(meta: ToolMeta) -> str:
    """The generic one-line summary of a finished call: its status unless ok, a command's exit code,
    the paths it changed. Tools refine it (``Tool.result_summary``); front ends show it."""
    parts: list[str] = []
    if meta.status is ToolStatus.ERROR and meta.exit_code not in (None, 0):
        parts.append(f"exit {meta.exit_code}")
    elif meta.status.failed:
        parts.append(meta.status.label)
    if meta.paths:
        parts.append(meta.paths[0].describe() if len(meta.paths) == 1 else f"{len(meta.paths)} files changed")
    return one_line(", ".join(parts))


def one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
