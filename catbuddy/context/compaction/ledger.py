"""The compaction ledger: what catbuddy's own code knows about the folded messages (docs/architecture.md §5).

A model's summary drops file lists and exit codes it finds dull; this does not. From the messages a
compaction folds and the previous ledger it derives the files read, the files created, modified or
deleted (net lines, the last edit's message id), the commands run and how they ended (a failing one
keeps a short tail), the last result of each test command, the errors met, the URLs fetched, the web
searches, the skills loaded, the MCP tools used, and any malformed tool call. It is stored as data in
the ``compaction`` record, so the next compaction merges data rather than text, and it is bounded:
the oldest reads go first, a changed file never goes.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.context.compaction.ledger_exec import (
    exec_outcome,
    file_removals,
    is_test_command,
    output_tail,
    runner_verdict,
)
from catbuddy.context.compaction.prompts import render
from catbuddy.messages import content_text
from catbuddy.session.history import HistoryEntry
from catbuddy.text import cut_line

LEDGER_TEMPLATE = "compact_ledger.md.j2"
LEDGER_VERSION = 1
# Hard caps per list, before the token bound; the newest entries are kept.
MAX_READS = 60
MAX_COMMANDS = 30
MAX_TESTS = 6
MAX_ERRORS = 20
MAX_URLS = 20
MAX_SEARCHES = 10
MAX_SKILLS = 20
MAX_MCP_TOOLS = 30
MAX_MALFORMED = 10
COMMAND_CHARS = 200
ERROR_CHARS = 200
# What the tools answer when a call did not do its job (tools/registry.run_tool, agent/tool_calls.py).
ERROR_PREFIXES = ("Error:", "Refused", "The user denied", "[Cancelled", "[Tool result unavailable")
UNKNOWN_TOOL_RE = re.compile(r"^Error: there is no tool named ")
KNOWN_TOOLS = frozenset(
    {
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "grep",
        "exec",
        "web_fetch",
        "web_search",
        "skill",
        "recall",
    }
)
EDITED_RE = re.compile(r"^Edited .*: replaced (\d+) occurrences?")
WROTE_RE = re.compile(r"^(Created|Overwrote|Wrote) .* \(([\d,]+) lines?, ")
READ_LINE_RE = re.compile(r"^ *\d+\t(.*)$")
# The order in which the bound drops entries; changed files are never dropped.
DROP_ORDER = ("reads", "commands", "searches", "urls", "errors", "tests", "malformed", "mcp_tools", "skills")


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
        return ledger

    @property
    def empty(self) -> bool:
        return not any(
            (self.reads, self.changes, self.commands, self.tests, self.errors, self.urls, self.searches,
             self.skills, self.mcp_tools, self.malformed)
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
            "dropped": {k: v for k, v in self.dropped.items() if v},
        }


def render_ledger(ledger: Ledger) -> str:
    """The ledger as Markdown (its own heading), '' when there is nothing in it."""
    if ledger.empty:
        return ""
    return render(LEDGER_TEMPLATE, **ledger.view())


# --- building -------------------------------------------------------------------------------------


def build_ledger(
    previous: Ledger | Mapping[str, Any] | None,
    entries: Sequence[HistoryEntry],
    work_root: Path | str | None = None,
) -> Ledger:
    """The previous ledger with what ``entries`` (the messages being folded) add to it. Never raises
    on bad input: a call it cannot read becomes a ``malformed`` note."""
    if isinstance(previous, Ledger):
        ledger = Ledger.from_dict(previous.to_dict())
    else:
        ledger = Ledger.from_dict(previous)
    _Builder(ledger, str(work_root) if work_root else None).absorb(entries)
    _cap(ledger)
    return ledger


@dataclass
class _Call:
    id: str
    name: str
    args: dict[str, Any] | None
    problem: str
    message_id: str


class _Builder:
    def __init__(self, ledger: Ledger, work_root: str | None) -> None:
        self.ledger = ledger
        self.work_root = work_root
        self.known: dict[str, str] = {}  # path -> its whole content as last seen (to diff an overwrite)

    def absorb(self, entries: Sequence[HistoryEntry]) -> None:
        pending: dict[str, _Call] = {}
        for entry in entries:
            message = entry.message if isinstance(entry.message, Mapping) else {}
            role = message.get("role")
            if role == "assistant":
                for call in _calls(message.get("tool_calls"), entry.id):
                    pending[call.id] = call
            elif role == "tool":
                answered = pending.pop(str(message.get("tool_call_id")), None)
                if answered is not None:
                    self._safely(answered, content_text(message.get("content")), entry.id)
        for call in pending.values():  # a call that never got its result
            self._safely(call, None, call.message_id)

    def _safely(self, call: _Call, result: str | None, result_id: str) -> None:
        try:
            self._one(call, result, result_id)
        except Exception as exc:  # a ledger entry is never worth a failed compaction
            self._malformed(
                call, f"could not be read into the ledger ({type(exc).__name__}: {exc})", result_id
            )

    def _one(self, call: _Call, result: str | None, result_id: str) -> None:
        if call.problem:
            self._malformed(call, call.problem, result_id)
            return
        if result is not None and UNKNOWN_TOOL_RE.match(result):
            self._malformed(call, "unknown tool", result_id)
            return
        if call.name not in KNOWN_TOOLS and not call.name.startswith("mcp__"):
            self._malformed(call, "unknown tool", result_id)
            return
        args = call.args or {}
        failed = result is None or result.startswith(ERROR_PREFIXES)
        if result is None:
            self._error(call.name, result_id, "the call got no result (interrupted or lost)")
        elif failed:
            self._error(call.name, result_id, result)
        handler = getattr(self, f"_tool_{call.name}", None)
        if call.name.startswith("mcp__"):
            self.ledger.mcp_tools[call.name] = self.ledger.mcp_tools.get(call.name, 0) + 1
        elif handler is not None:
            handler(args, result or "", failed, result_id)

    # --- per tool ----------------------------------------------------------------------------------

    def _tool_read_file(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        path = self._path(args.get("path"))
        if failed or not path:
            return
        self.ledger.reads.pop(path, None)
        self.ledger.reads[path] = mid
        whole = not args.get("offset") or args.get("offset") == 1
        if whole and "\n\n[Showing lines " not in result and "[... line cut" not in result:
            lines = [m.group(1) for line in result.split("\n") if (m := READ_LINE_RE.match(line))]
            self.known[path] = "\n".join(lines) + ("\n" if lines else "")

    def _tool_write_file(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        path, content = self._path(args.get("path")), args.get("content")
        match = WROTE_RE.match(result)
        if failed or not path or not isinstance(content, str) or match is None:
            return
        verb = match.group(1)
        if verb == "Wrote":  # "the content was unchanged"
            self.known[path] = content
            return
        change = self.ledger.changes.get(path)
        if verb == "Created":
            added, removed, unknown = _line_count(content), 0, False
            status = "created" if change is None or change.status == "created" else "modified"
        else:
            before = self.known.get(path)
            unknown = before is None
            added, removed = _line_delta(before, content) if before is not None else (_line_count(content), 0)
            status = "created" if change is not None and change.status == "created" else "modified"
        self._change(path, status, added, removed, mid, unknown=unknown)
        self.known[path] = content

    def _tool_edit_file(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        path, old, new = self._path(args.get("path")), args.get("old_string"), args.get("new_string")
        match = EDITED_RE.match(result)
        if failed or not path or not isinstance(old, str) or not isinstance(new, str) or match is None:
            return
        times = int(match.group(1))
        added, removed = _line_delta(old, new)
        change = self.ledger.changes.get(path)
        status = "created" if change is not None and change.status == "created" else "modified"
        self._change(path, status, added * times, removed * times, mid)
        if path in self.known:
            known = self.known[path]
            self.known[path] = (
                known.replace(old, new) if args.get("replace_all") else known.replace(old, new, 1)
            )

    def _tool_exec(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return
        shown = cut_line(" ".join(command.split()), COMMAND_CHARS)
        if result == "":
            outcome_status, code, output = "no result", None, ""
        else:
            outcome = exec_outcome(result, failed)
            outcome_status, code, output = outcome.status, outcome.exit_code, outcome.output
        tail = output_tail(output) if outcome_status in ("failed", "timeout", "killed", "unknown") else ""
        commands = self.ledger.commands
        if commands and commands[-1].command == shown and commands[-1].status == outcome_status:
            last = commands[-1]
            last.exit_code, last.id, last.tail, last.runs = code, mid, tail, last.runs + 1
        else:
            commands.append(CommandRun(shown, outcome_status, code, mid, tail))
        if is_test_command(command) and outcome_status != "error":
            self.ledger.tests = [t for t in self.ledger.tests if t.command != shown]
            self.ledger.tests.append(TestRun(shown, outcome_status, code, mid, runner_verdict(output)))
        if outcome_status == "ok":
            for removed_path, moved_to in file_removals(command):
                self._removed(removed_path, moved_to, mid)

    def _tool_web_fetch(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        url = args.get("url")
        if isinstance(url, str) and url.strip():
            self.ledger.urls.pop(url.strip(), None)
            self.ledger.urls[url.strip()] = mid

    def _tool_web_search(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        query = args.get("query")
        if isinstance(query, str) and query.strip():
            key = cut_line(" ".join(query.split()), COMMAND_CHARS)
            self.ledger.searches.pop(key, None)
            self.ledger.searches[key] = mid

    def _tool_skill(self, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
        name = args.get("name")
        if failed or not isinstance(name, str) or not name.strip():
            return
        key = name.strip() + (
            f"/{args['file']}" if isinstance(args.get("file"), str) and args["file"] else ""
        )
        self.ledger.skills.pop(key, None)
        self.ledger.skills[key] = mid

    # --- helpers -----------------------------------------------------------------------------------

    def _path(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            return ""
        path = os.path.normpath(value.strip())
        if self.work_root and os.path.isabs(path):
            root = os.path.normpath(self.work_root)
            if path.startswith(root + os.sep):
                path = path[len(root) + 1 :]
        return path

    def _change(
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

    def _removed(self, raw_path: str, moved_to: str | None, mid: str) -> None:
        path = self._path(raw_path)
        if not path:
            return
        change = self.ledger.changes.pop(path, None) or FileChange(path, "deleted")
        change.status, change.last_edit, change.edits = "deleted", mid, change.edits + 1
        change.moved_to = self._path(moved_to) if moved_to else ""
        self.ledger.changes[path] = change
        self.known.pop(path, None)
        if moved_to:
            target = self._path(moved_to)
            if target:
                self._change(target, "created", 0, 0, mid)

    def _error(self, tool: str, mid: str, text: str) -> None:
        first = next((line for line in text.splitlines() if line.strip()), text)
        self.ledger.errors.append(Note(tool, mid, cut_line(first.strip(), ERROR_CHARS)))

    def _malformed(self, call: _Call, problem: str, mid: str) -> None:
        self.ledger.malformed.append(Note(call.name or "(no name)", mid, problem))


def _calls(raw: Any, message_id: str) -> Iterable[_Call]:
    if not isinstance(raw, list):
        return
    for index, call in enumerate(raw):
        if not isinstance(call, Mapping):
            yield _Call(f"{message_id}#{index}", "", None, "a tool call that is not an object", message_id)
            continue
        raw_function = call.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, Mapping) else {}
        raw_name = function.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        call_id = str(call.get("id") or f"{message_id}#{index}")
        args, problem = _arguments(function.get("arguments"))
        if not name:
            problem = "a tool call without a tool name"
        yield _Call(call_id, name, args, problem, message_id)


def _arguments(raw: Any) -> tuple[dict[str, Any] | None, str]:
    if raw is None or raw == "":
        return {}, ""
    if isinstance(raw, Mapping):
        return dict(raw), ""
    if not isinstance(raw, str):
        return None, "arguments that are not a JSON object"
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None, "arguments that are not valid JSON"
    if not isinstance(value, dict):
        return None, "arguments that are not a JSON object"
    return value, ""


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _line_delta(before: str, after: str) -> tuple[int, int]:
    """Lines added and removed between two texts (what `git diff --stat` counts)."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


# --- bounds ---------------------------------------------------------------------------------------


def _cap(ledger: Ledger) -> None:
    """The hard caps per list: the oldest entries go, and are counted."""
    _trim_map(ledger, "reads", MAX_READS)
    _trim_list(ledger, "commands", MAX_COMMANDS)
    _trim_list(ledger, "tests", MAX_TESTS)
    _trim_list(ledger, "errors", MAX_ERRORS)
    _trim_map(ledger, "urls", MAX_URLS)
    _trim_map(ledger, "searches", MAX_SEARCHES)
    _trim_map(ledger, "skills", MAX_SKILLS)
    _trim_map(ledger, "mcp_tools", MAX_MCP_TOOLS)
    _trim_list(ledger, "malformed", MAX_MALFORMED)


def bound_ledger(ledger: Ledger, max_tokens: int, count: Callable[[str], int]) -> Ledger:
    """Drop entries (oldest reads first, then old commands, searches, URLs, errors, …; never a changed
    file) until the rendered ledger counts at most ``max_tokens``. Changes ``ledger`` in place."""
    for _ in range(50):  # each round drops about what is over; a few rounds converge
        text = render_ledger(ledger)
        over = count(text) - max_tokens
        if over <= 0:
            return ledger
        if not _drop(ledger, over, max(1, len(text)) / max(1, count(text))):
            return ledger  # only changed files left: they stay, whatever they cost
    return ledger


def _drop(ledger: Ledger, over_tokens: int, chars_per_token: float) -> bool:
    changed = set(ledger.changes)
    need = over_tokens * chars_per_token
    dropped_any = False
    for name in DROP_ORDER:
        while need > 0:
            item = _oldest(ledger, name, changed)
            if item is None:
                break
            need -= len(json.dumps(item, default=str)) * 0.8
            ledger.dropped[name] = ledger.dropped.get(name, 0) + 1
            dropped_any = True
        if need <= 0:
            break
    return dropped_any


def _oldest(ledger: Ledger, name: str, keep: set[str]) -> Any:
    """Remove and return the oldest droppable entry of list ``name`` (None when there is none). The
    newest test result is the last one dropped of all (it is what "the last test status" means)."""
    value = getattr(ledger, name)
    if isinstance(value, dict):
        for key in value:
            if name == "reads" and key in keep:
                continue
            return key, value.pop(key)
        return None
    if name == "tests" and len(value) <= 1:
        return None
    return value.pop(0) if value else None


def _trim_map(ledger: Ledger, name: str, limit: int) -> None:
    value: dict[str, Any] = getattr(ledger, name)
    while len(value) > limit:
        value.pop(next(iter(value)))
        ledger.dropped[name] = ledger.dropped.get(name, 0) + 1


def _trim_list(ledger: Ledger, name: str, limit: int) -> None:
    value: list[Any] = getattr(ledger, name)
    if len(value) > limit:
        ledger.dropped[name] = ledger.dropped.get(name, 0) + len(value) - limit
        del value[: len(value) - limit]


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
