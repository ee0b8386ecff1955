"""The compaction ledger's data (docs/architecture.md §5) and the one way entries get into it.

``Ledger`` is what a ``compaction`` record stores (``to_dict``/``from_dict``: data, merged across
compactions, never text) and what ``templates/compact_ledger.md.j2`` renders (``view``). ``LedgerWriter``
adds to it — a file changed, a command run, a read, an error — for the builder that reads the calls'
stored outcomes (``context/compaction/ledger.py``) and the one that reads older sessions' result text
(``context/compaction/ledger_legacy.py``) alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from catbuddy.text import cut_line

LEDGER_VERSION = 1
COMMAND_CHARS = 200
ERROR_CHARS = 200
RESTORED_PATHS_SHOWN = 20  # files named per undo, redo or rewind
FAILING_STATUSES = ("failed", "timeout", "killed", "unknown")  # a command whose output tail is kept


@dataclass
class FileChange:
    path: str
    status: str  # created, modified, deleted
    added: int = 0
    removed: int = 0
    edits: int = 0
    last_edit: str = ""  # id of the message that holds the last change's result
    removed_unknown: bool = False  # an overwrite of content the session never showed
    moved_to: str = ""


@dataclass
class CommandRun:
    command: str
    status: str  # ok, failed, timeout, killed, error, unknown, no result
    exit_code: int | None
    id: str
    tail: str = ""  # a failing command's last lines
    runs: int = 1  # the same command run several times in a row


@dataclass
class TestRun:
    command: str
    status: str
    exit_code: int | None
    id: str
    summary: str = ""


@dataclass
class Note:
    """An error result, or a malformed tool call: which tool, where, and what was wrong."""

    tool: str
    id: str
    text: str


@dataclass
class Ledger:
    reads: dict[str, str] = field(default_factory=dict)  # path -> last read's message id, oldest first
    changes: dict[str, FileChange] = field(default_factory=dict)
    commands: list[CommandRun] = field(default_factory=list)
    tests: list[TestRun] = field(default_factory=list)  # the last run of each test command, newest last
    errors: list[Note] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)  # url -> message id ("failed" noted in errors)
    searches: dict[str, str] = field(default_factory=dict)
    skills: dict[str, str] = field(default_factory=dict)
    mcp_tools: dict[str, int] = field(default_factory=dict)  # name -> calls
    malformed: list[Note] = field(default_factory=list)
    # Files the user put back with /undo, /redo or /rewind: tool = the action, text = the files and turns.
    restores: list[Note] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # entries the bounds left out, per list

    # --- storage --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["version"] = LEDGER_VERSION
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Ledger:
        """A stored ledger; anything unreadable in it is left out rather than failing a compaction."""
        ledger = cls()
        if not isinstance(data, Mapping):
            return ledger
        ledger.reads = _str_map(data.get("reads"))
        ledger.urls = _str_map(data.get("urls"))
        ledger.searches = _str_map(data.get("searches"))
        ledger.skills = _str_map(data.get("skills"))
        ledger.mcp_tools = {k: v for k, v in _map(data.get("mcp_tools")).items() if isinstance(v, int)}
        ledger.dropped = {k: v for k, v in _map(data.get("dropped")).items() if isinstance(v, int)}
        for path, raw in _map(data.get("changes")).items():
            change = _load(FileChange, raw)
            if change is not None:
                ledger.changes[str(path)] = change
        ledger.commands = _load_list(CommandRun, data.get("commands"))
        ledger.tests = _load_list(TestRun, data.get("tests"))
        ledger.errors = _load_list(Note, data.get("errors"))
        ledger.malformed = _load_list(Note, data.get("malformed"))
        ledger.restores = _load_list(Note, data.get("restores"))
        return ledger

    @property
    def empty(self) -> bool:
        return not any(
            (self.reads, self.changes, self.commands, self.tests, self.errors, self.urls, self.searches,
             self.skills, self.mcp_tools, self.malformed, self.restores)
        )  # fmt: skip

    @property
    def last_test(self) -> TestRun | None:
        return self.tests[-1] if self.tests else None

    # --- the view the template renders ----------------------------------------------------------

    def view(self) -> dict[str, Any]:
        changed = set(self.changes)
        return {
            "changes": list(self.changes.values()),
            "reads": [(path, mid) for path, mid in self.reads.items() if path not in changed],
            "commands": self.commands,
            "tests": self.tests,
            "last_test": self.last_test,
            "errors": self.errors,
            "urls": list(self.urls.items()),
            "searches": list(self.searches.items()),
            "skills": list(self.skills.items()),
            "mcp_tools": list(self.mcp_tools.items()),
            "malformed": self.malformed,
            "restores": self.restores,
            "dropped": {k: v for k, v in self.dropped.items() if v},
        }


class LedgerWriter:
    """Adds entries to a ledger; paths are made relative to the work root, as the model writes them."""

    def __init__(self, ledger: Ledger, work_root: str | None) -> None:
        self.ledger = ledger
        self.work_root = work_root
        self.known: dict[str, str] = {}  # path -> its whole content as last seen (to diff an overwrite)

    def path(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            return ""
        path = os.path.normpath(value.strip())
        if self.work_root and os.path.isabs(path):
            root = os.path.normpath(self.work_root)
            if path.startswith(root + os.sep):
                path = path[len(root) + 1 :]
        return path

    def read(self, raw_path: Any, mid: str) -> str:
        path = self.path(raw_path)
        if path:
            self.ledger.reads.pop(path, None)
            self.ledger.reads[path] = mid
        return path

    def change(
        self, path: str, status: str, added: int, removed: int, mid: str, *, unknown: bool = False
    ) -> None:
        change = self.ledger.changes.pop(path, None) or FileChange(path, status)
        change.status = status
        change.added += added
        change.removed += removed
        change.edits += 1
        change.last_edit = mid
        change.removed_unknown = change.removed_unknown or unknown
        change.moved_to = ""
        self.ledger.changes[path] = change  # re-inserted: the order is the order of the last change

    def status_after(self, path: str, created: bool) -> str:
        """A file created, or modified, stays "created" if this ledger saw it created."""
        previous = self.ledger.changes.get(path)
        if created and (previous is None or previous.status == "created"):
            return "created"
        return "created" if previous is not None and previous.status == "created" else "modified"

    def removed(self, raw_path: str, moved_to: str | None, mid: str) -> None:
        path = self.path(raw_path)
        if not path:
            return
        change = self.ledger.changes.pop(path, None) or FileChange(path, "deleted")
        change.status, change.last_edit, change.edits = "deleted", mid, change.edits + 1
        change.moved_to = self.path(moved_to) if moved_to else ""
        self.ledger.changes[path] = change
        self.known.pop(path, None)
        if moved_to:
            target = self.path(moved_to)
            if target:
                self.change(target, "created", 0, 0, mid)

    def command(self, command: str, status: str, code: int | None, tail: str, mid: str) -> str:
        """A command run (the same command ending the same way in a row is counted, not listed again);
        returns the command as the ledger shows it."""
        shown = cut_line(" ".join(command.split()), COMMAND_CHARS)
        tail = tail if status in FAILING_STATUSES else ""
        commands = self.ledger.commands
        if commands and commands[-1].command == shown and commands[-1].status == status:
            last = commands[-1]
            last.exit_code, last.id, last.tail, last.runs = code, mid, tail, last.runs + 1
        else:
            commands.append(CommandRun(shown, status, code, mid, tail))
        return shown

    def test(self, command: str, status: str, code: int | None, verdict: str, mid: str) -> None:
        """The last run of a test command (an earlier run of the same command is replaced)."""
        shown = cut_line(" ".join(command.split()), COMMAND_CHARS)
        self.ledger.tests = [t for t in self.ledger.tests if t.command != shown]
        self.ledger.tests.append(TestRun(shown, status, code, mid, verdict))

    def url(self, url: str, mid: str) -> None:
        if url.strip():
            self.ledger.urls.pop(url.strip(), None)
            self.ledger.urls[url.strip()] = mid

    def search(self, query: str, mid: str) -> None:
        if query.strip():
            key = cut_line(" ".join(query.split()), COMMAND_CHARS)
            self.ledger.searches.pop(key, None)
            self.ledger.searches[key] = mid

    def skill(self, key: str, mid: str) -> None:
        self.ledger.skills.pop(key, None)
        self.ledger.skills[key] = mid

    def external(self, name: str) -> None:
        self.ledger.mcp_tools[name] = self.ledger.mcp_tools.get(name, 0) + 1

    def error(self, tool: str, mid: str, text: str) -> None:
        first = next((line for line in text.splitlines() if line.strip()), text)
        self.ledger.errors.append(Note(tool, mid, cut_line(first.strip(), ERROR_CHARS)))

    def malformed(self, tool: str, problem: str, mid: str) -> None:
        self.ledger.malformed.append(Note(tool or "(no name)", mid, problem))

    def restored(self, action: str, paths: list[str], turns: list[str], mid: str) -> None:
        shown = ", ".join(f"`{self.path(p) or p}`" for p in paths[:RESTORED_PATHS_SHOWN])
        more = f" and {len(paths) - RESTORED_PATHS_SHOWN} more" if len(paths) > RESTORED_PATHS_SHOWN else ""
        when = "after" if action == "redo" else "before"
        self.ledger.restores.append(Note(action, mid, f"{shown}{more} back as {when} turn {', '.join(turns)}"))


# --- loading helpers ------------------------------------------------------------------------------


def _map(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def _str_map(value: Any) -> dict[str, str]:
    return {k: str(v) for k, v in _map(value).items()}


def _load(cls: Any, raw: Any) -> Any:
    if not isinstance(raw, Mapping):
        return None
    names = set(cls.__dataclass_fields__)
    try:
        return cls(**{k: v for k, v in raw.items() if k in names})
    except TypeError:
        return None


def _load_list(cls: Any, raw: Any) -> list[Any]:
    if not isinstance(raw, list):
        return []
    return [item for item in (_load(cls, r) for r in raw) if item is not None]
