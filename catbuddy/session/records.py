"""Session records (docs/architecture.md §6) and the one tolerant JSONL reader.

A session file holds one JSON object per line: a ``meta`` line, then ``message``, ``compaction`` and
``event`` records in the order they happened. Reading never trusts the file: a torn last line (the
process died mid-write), a corrupt line, a line too long or nested too deeply to parse safely, or a
record of the wrong shape (checked against the schema below, see ``catbuddy.session.schema``) is
skipped, counted and reported, and
everything else still loads. A record is never sent to a model unless it passed. Unknown record types
are skipped quietly so that an older catbuddy can open a file written by a newer one.

The message schema is the OpenAI chat format: ``role`` one of system/user/assistant/tool; ``content``
a string, null (assistant only, with tool calls) or a list of parts (objects with a string ``type``,
text parts with a string ``text``); ``tool_calls`` (assistant only) a list of ``{"id": str, "type":
"function", "function": {"name": str, "arguments": str}}`` with distinct ids; ``tool_call_id`` a
string on tool messages (and only there); ``name`` a string.

A tool message's record may carry ``meta`` beside its content: the call's structured outcome
(``catbuddy.tool_meta``), part of the record's envelope, never of the message a model is sent. Event
records of kinds an older catbuddy wrote are read in today's shape (``LEGACY_EVENTS``).

``read_session_file`` also reads plain OpenAI message lines (``{"role": ..., "content": ...}`` with no
``type``), which is what ``catbuddy context --history FILE.jsonl`` accepts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.errors import EXIT_USAGE, CatbuddyError
from catbuddy.messages import valid_json
from catbuddy.session.schema import message_problem

META = "meta"
MESSAGE = "message"
COMPACTION = "compaction"
COMPACTION_UNDO = "compaction_undo"
EVENT = "event"

# Keys of the record envelope; a message dict may not use them or they would be ambiguous on disk.
MESSAGE_ENVELOPE = frozenset({"type", "id", "ts", "meta"})
COMPACTION_KEYS = frozenset({"type", "id", "ts", "summary", "folded_through"})
UNDO_KEYS = frozenset({"type", "ts", "voids"})
EVENT_ENVELOPE = frozenset({"type", "ts", "kind"})
META_KEYS = ("session_id", "created_at", "work_root", "model", "catbuddy_version")

UTF8_BOM = b"\xef\xbb\xbf"
MAX_LISTED_PROBLEMS = 10  # more corrupt lines than this are summarised in one line
# Bounds checked before (and right after) parsing, so no line can exhaust memory or the stack. Nothing
# catbuddy writes comes near them: tool results and arguments are capped far below.
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32  # JSON nesting of a record; a message needs 5 (record, tool_calls, call, function, …)
_ESCAPED_SURROGATE = (b"\\ud", b"\\uD")  # only an escape can put a lone surrogate into parsed JSON

_DECODER = json.JSONDecoder()


class SessionError(CatbuddyError):
    """Base of every session problem the CLI and TUI show to the user. Most are asked for by the command
    line (an unknown id, a session open elsewhere, a file that is not a session): a usage error."""

    exit_code = EXIT_USAGE


class SessionFileError(SessionError):
    """A file cannot be read as a session at all (missing, unreadable, or not JSONL)."""


class RecordError(CatbuddyError, ValueError):
    """One JSON object is not a valid record; the reader reports it like a corrupt line."""


@dataclass
class MetaRecord:
    session_id: str
    created_at: str = ""
    work_root: str = ""
    model: str = ""
    catbuddy_version: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # fields a newer catbuddy may add

    def to_json(self) -> dict[str, Any]:
        return {"type": META, **{key: getattr(self, key) for key in META_KEYS}, **self.extra}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MetaRecord:
        values = {key: obj.get(key, "") for key in META_KEYS}
        if not isinstance(values["session_id"], str) or not values["session_id"]:
            raise RecordError("meta record without a session_id")
        for key, value in values.items():
            if not isinstance(value, str):
                raise RecordError(f"meta field {key!r} should be a string, got {type(value).__name__}")
        extra = {k: v for k, v in obj.items() if k != "type" and k not in META_KEYS}
        return cls(**values, extra=extra)


@dataclass
class MessageRecord:
    """One chat message; ``message`` is the OpenAI dict exactly as sent or received, ``meta`` (tool
    messages) the call's ``ToolMeta`` as stored, None when there is none (older sessions)."""

    id: str
    ts: str | None
    message: dict[str, Any]
    meta: dict[str, Any] | None = None

    @property
    def role(self) -> str:
        return str(self.message["role"])

    def to_json(self) -> dict[str, Any]:
        data = {"type": MESSAGE, "id": self.id, "ts": self.ts, **self.message}
        if self.meta is not None:
            data["meta"] = self.meta
        return data

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> MessageRecord:
        record_id = obj.get("id")
        if not isinstance(record_id, str) or not record_id:
            raise RecordError("message record without an id")
        if obj.get("role") is None:
            raise RecordError(f"message {record_id} has no role")
        message = dict(obj)
        for key in MESSAGE_ENVELOPE:
            message.pop(key, None)
        problem = message_problem(message)
        if problem:
            raise RecordError(f"message {record_id}: {problem}")
        meta = obj.get("meta")  # a damaged one is dropped, never the message: it reads as unknown
        return cls(id=record_id, ts=_ts(obj), message=message, meta=meta if isinstance(meta, dict) else None)


@dataclass
class CompactionRecord:
    id: str
    ts: str | None
    summary: str
    folded_through: str  # id of the last message the summary replaces
    extra: dict[str, Any] = field(default_factory=dict)  # instructions, tokens_before, tokens_after, …

    def to_json(self) -> dict[str, Any]:
        return {
            "type": COMPACTION,
            "id": self.id,
            "ts": self.ts,
            "summary": self.summary,
            "folded_through": self.folded_through,
            **self.extra,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CompactionRecord:
        record_id = obj.get("id")
        if not isinstance(record_id, str) or not record_id:
            raise RecordError("compaction record without an id")
        summary, folded = obj.get("summary"), obj.get("folded_through")
        if not isinstance(summary, str):
            raise RecordError(f"compaction {record_id} has no summary")
        if not isinstance(folded, str) or not folded:
            raise RecordError(f"compaction {record_id} has no folded_through message id")
        extra = {k: v for k, v in obj.items() if k not in COMPACTION_KEYS}
        return cls(id=record_id, ts=_ts(obj), summary=summary, folded_through=folded, extra=extra)


@dataclass
class CompactionUndoRecord:
    """``/compact undo``: the compaction ``voids`` no longer counts; the history is rebuilt without it."""

    ts: str | None
    voids: str  # id of the compaction record this undoes
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": COMPACTION_UNDO, "ts": self.ts, "voids": self.voids, **self.extra}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CompactionUndoRecord:
        voids = obj.get("voids")
        if not isinstance(voids, str) or not voids:
            raise RecordError("compaction_undo record without the id of the compaction it voids")
        return cls(ts=_ts(obj), voids=voids, extra={k: v for k, v in obj.items() if k not in UNDO_KEYS})


@dataclass
class EventRecord:
    """Something that happened besides messages: stop, error, governance report, approval, usage."""

    ts: str | None
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": EVENT, "ts": self.ts, "kind": self.kind, **self.data}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> EventRecord:
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise RecordError("event record without a kind")
        data = {k: v for k, v in obj.items() if k not in EVENT_ENVELOPE}
        upgrade = LEGACY_EVENTS.get(kind)
        if upgrade is not None:
            kind, data = upgrade(data)
        return cls(ts=_ts(obj), kind=kind, data=data)


def _approval(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``approval`` (written before events and records were one): the tool was ``tool``."""
    upgraded = {("name" if key == "tool" else key): value for key, value in data.items()}
    return "approval_resolved", upgraded


def _governance(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A governance report written flat, before it was the event's ``report`` beside its ``summary``."""
    if isinstance(data.get("report"), dict):
        return "governance", data
    return "governance", {"report": data, "summary": ""}


# Event records as an older catbuddy wrote them, read as the event of today's kind and fields.
LEGACY_EVENTS = {"approval": _approval, "governance": _governance}


Record = MessageRecord | CompactionRecord | CompactionUndoRecord | EventRecord

_BODY_TYPES: dict[
    str, type[MessageRecord] | type[CompactionRecord] | type[CompactionUndoRecord] | type[EventRecord]
] = {
    MESSAGE: MessageRecord,
    COMPACTION: CompactionRecord,
    COMPACTION_UNDO: CompactionUndoRecord,
    EVENT: EventRecord,
}


def _ts(obj: Mapping[str, Any]) -> str | None:
    value = obj.get("ts")
    if value is None or isinstance(value, str):
        return value
    return str(value)  # a foreign file may use epoch numbers; keep them readable


@dataclass
class LoadResult:
    path: Path
    meta: MetaRecord | None = None
    records: list[Record] = field(default_factory=list)  # messages, compactions, events, in file order
    corrupt_lines: list[int] = field(default_factory=list)  # 1-based line numbers, torn tail included
    truncated_tail: bool = False
    unknown_records: int = 0  # records of types this version does not know (not corruption)
    problems: list[str] = field(default_factory=list)  # human-readable, for the UI and `catbuddy context`

    @property
    def messages(self) -> list[MessageRecord]:
        return [r for r in self.records if isinstance(r, MessageRecord)]


def read_session_file(path: Path | str) -> LoadResult:
    """Read a session JSONL (or plain OpenAI message lines) tolerantly; see the module docstring.

    Raises ``SessionFileError`` when the file cannot be read, or when it has content but not one line is
    a session record or a chat message (a JSON array, pretty-printed JSON, a binary file, …).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionFileError(f"{path}: no such session file") from None
    except IsADirectoryError:
        raise SessionFileError(
            f"{path} is a directory, not a session file (expected a .jsonl file)"
        ) from None
    except OSError as exc:
        raise SessionFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None

    result = LoadResult(path=path)
    data = data.removeprefix(UTF8_BOM)  # files saved by some Windows editors start with one
    lines = data.split(b"\n")  # never str.splitlines: it also splits on U+2028 and friends
    last_index = len(lines) - 1  # after a final "\n" this is an empty string, not a line
    recognised = 0
    nonblank = 0
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        nonblank += 1
        lineno = index + 1
        torn = index == last_index  # no newline after it: the write may have been cut short
        try:
            obj, repaired = parse_line(line)
        except RecordError as exc:
            _corrupt(result, lineno, torn, str(exc))
            continue
        if repaired:
            result.problems.append(f"line {lineno}: {repaired}")
        kind = obj.get("type")
        if kind is None and "role" in obj:
            kind = MESSAGE  # a plain OpenAI message line
            obj = {"id": f"line{lineno}", **obj}
        if not isinstance(kind, str):
            _corrupt(result, lineno, torn, "no record type")
            continue
        recognised += 1
        try:
            if kind == META:
                meta = MetaRecord.from_json(obj)
                if result.meta is None:
                    result.meta = meta
                else:
                    result.problems.append(f"line {lineno}: a second meta record, ignored")
                continue
            record_type = _BODY_TYPES.get(kind)
            if record_type is None:
                result.unknown_records += 1
                continue
            result.records.append(record_type.from_json(obj))
        except RecordError as exc:
            _corrupt(result, lineno, torn, str(exc))

    if nonblank and not recognised:
        raise SessionFileError(_not_jsonl_message(path, data, nonblank))
    _summarise_problems(result)
    return result


def parse_line(line: bytes) -> tuple[dict[str, Any], str]:
    """One JSONL line as a JSON object, within the size and nesting bounds; raises ``RecordError``.

    Also returns what had to be repaired ("" if nothing): bytes that are not UTF-8 and escaped lone
    surrogates become U+FFFD, so every string that loads can be written and sent again."""
    if len(line) > MAX_LINE_BYTES:
        raise RecordError(f"a line of {len(line):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit")
    repaired = ""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text, repaired = line.decode("utf-8", "replace"), "bytes that are not UTF-8 replaced by U+FFFD"
    try:
        obj, end = _DECODER.raw_decode(text)  # json.loads minus its whitespace regexes: ~30% faster
    except RecursionError:  # the C decoder stops at the interpreter's recursion limit, cleanly
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        raise RecordError("not valid JSON") from None
    if end != len(text) and text[end:].strip():
        raise RecordError("not valid JSON (extra data after the object)")
    if not isinstance(obj, dict):
        raise RecordError(f"a JSON {type(obj).__name__}, not an object")
    # Fewer brackets than the bound cannot nest past it (the usual case, counted in C).
    if line.count(b"{") + line.count(b"[") > MAX_DEPTH and _too_deep(obj):
        raise RecordError(f"nested more than {MAX_DEPTH} levels deep")
    if _ESCAPED_SURROGATE[0] in line or _ESCAPED_SURROGATE[1] in line:
        cleaned = valid_json(obj)
        if cleaned != obj:
            obj, repaired = cleaned, "lone surrogates replaced by U+FFFD"
    return obj, repaired


def _too_deep(obj: Any) -> bool:
    """Deeper than ``MAX_DEPTH``? Iterative, and visits only containers: cheap for real records."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def rebuild_meta(session_id: str, records: list[Record]) -> MetaRecord:
    """A meta record for a session whose meta line is lost: the id from the file name, the start
    time from its first record, the model from its latest /model switch (if any)."""
    created = next((r.ts for r in records if r.ts), "") or ""
    model = next(
        (
            str(r.data["model"])
            for r in reversed(records)
            if isinstance(r, EventRecord) and r.kind == "model" and isinstance(r.data.get("model"), str)
        ),
        "",
    )
    return MetaRecord(session_id=session_id, created_at=created, model=model, extra={"rebuilt": True})


def _corrupt(result: LoadResult, lineno: int, torn: bool, reason: str) -> None:
    result.corrupt_lines.append(lineno)
    if torn:
        result.truncated_tail = True
        result.problems.append(
            f"line {lineno}: truncated last line ({reason}); the write was cut short, skipped"
        )
    else:
        result.problems.append(f"line {lineno}: {reason}, skipped")


def _summarise_problems(result: LoadResult) -> None:
    if len(result.problems) > MAX_LISTED_PROBLEMS:
        hidden = len(result.problems) - MAX_LISTED_PROBLEMS
        result.problems[MAX_LISTED_PROBLEMS:] = [f"… and {hidden} more problems"]
    if result.corrupt_lines:
        total = len(result.corrupt_lines)
        result.problems.insert(
            0, f"{result.path.name}: {total} unreadable line{'s' if total > 1 else ''} skipped"
        )


def _not_jsonl_message(path: Path, data: bytes, nonblank: int) -> str:
    head = data.lstrip()[:1]
    hint = ""
    if head == b"[":
        hint = " It looks like a JSON array: write one message object per line instead."
    elif head == b"{":
        hint = " It looks like pretty-printed JSON: JSONL needs each object on a single line."
    elif b"\x00" in data[:4096]:
        hint = " It looks like a binary file."
    return (
        f"{path} is not a session file: expected JSONL, one JSON object per line (catbuddy session "
        f"records or OpenAI chat messages with a 'role'), but none of its {nonblank} non-empty lines is one."
        f"{hint}"
    )
