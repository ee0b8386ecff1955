"""The compaction ledger: what catbuddy's own code knows about the folded messages (docs/architecture.md §5).

A model's summary drops file lists and exit codes it finds dull; this does not. From the messages a
compaction folds and the previous ledger it derives the files read, the files created, modified or
deleted (net lines, the last edit's message id), the commands run and how they ended (a failing one
keeps a short tail), the last result of each test command, the errors met, the URLs fetched, the web
searches, the skills loaded, the MCP tools used, and any malformed tool call. It is stored as data in
the ``compaction`` record, so the next compaction merges data rather than text, and it is bounded:
the oldest reads go first, a changed file never goes.

It reads each call's stored outcome (``catbuddy.tool_meta``, written beside the result): its status and
exit code, the paths it changed, and the facts its tool reported (``Tool.ledger_facts``). No tool is
named here, so a new tool's calls are recorded without a change to this file. Results stored without an
outcome (older sessions, a call that never got a result) are read from their text by
``context/compaction/ledger_legacy.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.context.compaction.ledger_legacy import absorb_legacy
from catbuddy.context.compaction.ledger_model import (
    CommandRun,
    FileChange,
    Ledger,
    LedgerWriter,
    Note,
    TestRun,
)
from catbuddy.context.compaction.prompts import render
from catbuddy.messages import content_text
from catbuddy.session.history import RESTORED_META_KEY, HistoryEntry
from catbuddy.tool_meta import Change, FactKind, LedgerFact, PathChange, ToolMeta, ToolStatus

__all__ = [
    "CommandRun",
    "FileChange",
    "Ledger",
    "Note",
    "TestRun",
    "bound_ledger",
    "build_ledger",
    "render_ledger",
]

LEDGER_TEMPLATE = "compact_ledger.md.j2"
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
MAX_RESTORES = 10
# The order in which the bound drops entries; changed files are never dropped.
DROP_ORDER = (
    "reads", "commands", "searches", "urls", "errors", "tests", "malformed", "mcp_tools", "skills", "restores"
)  # fmt: skip


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
    _Builder(LedgerWriter(ledger, str(work_root) if work_root else None)).absorb(entries)
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
    def __init__(self, writer: LedgerWriter) -> None:
        self.writer = writer

    def absorb(self, entries: Sequence[HistoryEntry]) -> None:
        pending: dict[str, _Call] = {}
        for entry in entries:
            message = entry.message if isinstance(entry.message, Mapping) else {}
            role = message.get("role")
            if role == "user" and entry.meta:
                self._restores(entry)
            elif role == "assistant":
                for call in _calls(message.get("tool_calls"), entry.id):
                    pending[call.id] = call
            elif role == "tool":
                answered = pending.pop(str(message.get("tool_call_id")), None)
                if answered is not None:
                    self._safely(answered, entry)
        for call in pending.values():  # a call that never got its result
            self._safely(call, None)

    def _restores(self, entry: HistoryEntry) -> None:
        """What the user put back before this message (/undo, /redo, /rewind), stored in its meta."""
        restored = (entry.meta or {}).get(RESTORED_META_KEY)
        for item in restored if isinstance(restored, list) else []:
            if not isinstance(item, Mapping):
                continue
            paths = [str(p) for p in item.get("paths") or [] if isinstance(p, str)]
            turns = [str(t) for t in item.get("turns") or [] if isinstance(t, str)]
            if paths:
                self.writer.restored(str(item.get("action") or "undo"), paths, turns, entry.id)

    def _safely(self, call: _Call, result: HistoryEntry | None) -> None:
        mid = result.id if result is not None else call.message_id
        try:
            self._one(call, result, mid)
        except Exception as exc:  # a ledger entry is never worth a failed compaction
            self.writer.malformed(
                call.name, f"could not be read into the ledger ({type(exc).__name__}: {exc})", mid
            )

    def _one(self, call: _Call, result: HistoryEntry | None, mid: str) -> None:
        if call.problem:
            self.writer.malformed(call.name, call.problem, mid)
            return
        text = content_text(result.message.get("content")) if result is not None else None
        meta = ToolMeta.from_json(result.meta) if result is not None else None
        if meta is None or meta.status is ToolStatus.UNKNOWN:
            absorb_legacy(self.writer, call.name, call.args or {}, text, mid)
            return
        self._outcome(call.name, meta, text or "", mid)

    def _outcome(self, name: str, meta: ToolMeta, text: str, mid: str) -> None:
        """A call with a stored outcome: its error, the paths it changed, its tool's facts."""
        writer = self.writer
        if meta.malformed:
            writer.malformed(name, meta.malformed, mid)
            return
        # A command that ran and exited non-zero, or timed out, is a command's status, not an error met.
        if meta.failed and meta.exit_code is None and meta.status is not ToolStatus.TIMED_OUT:
            writer.error(name, mid, text)
        for change in meta.paths:
            self._change(change, mid)
        for fact in meta.facts:
            self._fact(fact, meta, mid)

    def _change(self, change: PathChange, mid: str) -> None:
        writer = self.writer
        if change.change is Change.DELETED:
            writer.removed(change.path, change.moved_to or None, mid)
            return
        path = writer.path(change.path)
        if not path:
            return
        status = writer.status_after(path, created=change.change is Change.CREATED)
        unknown = change.removed is None
        writer.change(path, status, change.added or 0, change.removed or 0, mid, unknown=unknown)

    def _fact(self, fact: LedgerFact, meta: ToolMeta, mid: str) -> None:
        writer = self.writer
        kind = fact.kind
        if kind == FactKind.READ:
            writer.read(fact.value, mid)
        elif kind == FactKind.COMMAND:
            status, code = command_status(meta)
            writer.command(fact.value, status, code, fact.detail, mid)
        elif kind == FactKind.TEST:
            status, code = command_status(meta)
            if status != "error":
                writer.test(fact.value, status, code, fact.detail, mid)
        elif kind == FactKind.URL:
            writer.url(fact.value, mid)
        elif kind == FactKind.SEARCH:
            writer.search(fact.value, mid)
        elif kind == FactKind.SKILL:
            writer.skill(fact.value, mid)
        elif kind == FactKind.EXTERNAL:
            writer.external(fact.value)
        # a kind this version does not know: left out


def command_status(meta: ToolMeta) -> tuple[str, int | None]:
    """How a command ended, in the ledger's words: ok, failed, timeout, killed, or error (not run)."""
    code = meta.exit_code
    if meta.status is ToolStatus.OK:
        return "ok", code if code is not None else 0
    if meta.status is ToolStatus.TIMED_OUT:
        return "timeout", None
    if code is not None:
        return ("killed", code) if code < 0 else ("failed", code)
    return "error", None


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
    _trim_list(ledger, "restores", MAX_RESTORES)


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
