"""Searching the raw messages of session files, fast, without loading them (docs/architecture.md §6).

What `recall` uses. A file is streamed in blocks of whole lines and searched as bytes first; only the
lines that can match are parsed as JSON, and no working history is ever built. Words match
case-insensitively (on the lowered bytes) and a message ranks by how many of the words it holds,
how often, and how rare they are; a regex is matched on each block with JSON's string escapes undone
(``codecs.escape_decode``), then checked exactly on the decoded text of every candidate message.
"""

from __future__ import annotations

import bisect
import codecs
import json
import math
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.session.history import active_compactions
from catbuddy.session.records import CompactionRecord, CompactionUndoRecord, Record, RecordError

BLOCK_BYTES = 8 * 1024 * 1024
NAME_LOOKBACK = 1024 * 1024  # a result's call is in the assistant message just before the results
# Words that are also the keys and values of every record line: a byte hit on them says nothing.
STRUCTURAL_WORDS = frozenset(
    {"type", "message", "id", "ts", "role", "user", "assistant", "tool", "system", "content", "tool_calls",
     "function", "name", "arguments", "tool_call_id", "null", "true", "false", "meta", "event", "kind",
     "compaction", "summary"}
)  # fmt: skip
MESSAGE_MARK = b'{"type":"message"'
SPACED_MESSAGE_MARK = b'{"type": "message"'  # files written by json.dumps' defaults
COMPACTION_MARK = b'{"type":"compaction'  # compaction and compaction_undo lines alike
RECALL_MARK = b'"name":"recall"'
ANCHORS_RE = re.compile(r"(?<!\\)[\^$]|\\[AZ]")
RECORD_SEPARATOR = "\x1e"  # JSON escapes it inside strings: it never occurs raw in a record line
_TO_SEPARATOR = bytes.maketrans(b"\n", RECORD_SEPARATOR.encode())


@dataclass
class Query:
    terms: list[str] = field(default_factory=list)  # lower-case words and phrases
    pattern: re.Pattern[str] | None = None
    role: str = ""  # only messages of this role ("" for all)
    skip_tool: str = "recall"  # the calls (and results) of this tool are not searched


@dataclass
class Hit:
    score: float
    session: str
    id: str
    role: str
    position: int  # 1-based index of the message in its session
    text: str  # the searchable text of the message
    start: int  # where the best match starts in ``text``
    end: int
    offset: int = 0  # where its line starts in the file
    call_id: str = ""  # a tool result's call
    terms: tuple[str, ...] = ()  # the query's words it holds
    folded: bool = False  # before the fold of the compaction in force


@dataclass
class SearchStats:
    messages: int = 0  # message records searched
    sessions: int = 0


def search_sessions(files: Sequence[tuple[str, Path]], query: Query) -> tuple[list[Hit], SearchStats]:
    """Every matching message of ``files`` (session id, path), best first; ties go to the first
    file, then to newer messages. Unreadable files are skipped."""
    stats = SearchStats()
    hits: list[Hit] = []
    for session_id, path in files:
        try:
            hits += _search_file(session_id, path, query, stats)
        except OSError:
            continue
        stats.sessions += 1
    _weigh(hits, query)
    first = files[0][0] if files else ""
    hits.sort(key=lambda h: (-h.score, h.session != first, -h.position))
    return hits, stats


def _search_file(session_id: str, path: Path, query: Query, stats: SearchStats) -> list[Hit]:
    hits: list[Hit] = []
    compactions: list[Record] = []
    skipped_calls: set[str] = set()
    position = 0  # messages before the current block
    offset = 0
    mark = MESSAGE_MARK
    for index, block in enumerate(_blocks(path)):
        if index == 0 and MESSAGE_MARK not in block and SPACED_MESSAGE_MARK in block:
            mark = SPACED_MESSAGE_MARK
        _note_calls(block, query.skip_tool, skipped_calls)
        compactions += _compaction_records(block)
        counted_to, counted = 0, position
        for start, end in _candidate_spans(block, query):
            counted += block.count(mark, counted_to, start)
            counted_to = start
            record = _parse(block[start:end])
            if record is None or record.get("type", "message") != "message":
                continue
            hit = _match(record, query, skipped_calls)
            if hit is not None:
                hit.session, hit.position, hit.offset = session_id, counted + 1, offset + start
                hits.append(hit)
        position = counted + block.count(mark, counted_to)
        offset += len(block)
    stats.messages += position
    boundary = _folded_number(compactions)
    if boundary is not None:
        for hit in hits:
            number = id_number(hit.id)
            hit.folded = number is not None and number <= boundary
    return hits


def _blocks(path: Path) -> Iterator[bytes]:
    """The file in blocks of whole lines (a torn last line comes last, on its own)."""
    with path.open("rb") as handle:
        carry = b""
        while True:
            data = handle.read(BLOCK_BYTES)
            if not data:
                if carry:
                    yield carry + b"\n"
                return
            if carry:
                data = carry + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            carry = data[cut:]
            yield data[:cut] if carry else data


def _line_span(block: bytes, index: int) -> tuple[int, int]:
    start = block.rfind(b"\n", 0, index) + 1
    end = block.find(b"\n", index)
    return start, len(block) if end < 0 else end + 1


def _candidate_spans(block: bytes, query: Query) -> list[tuple[int, int]]:
    """The lines of ``block`` that may hold a match, in order (each is checked exactly later)."""
    if query.pattern is not None:
        return _regex_spans(block, query.pattern)
    lowered = block.lower()
    needles = [t.encode() for t in query.terms if t not in STRUCTURAL_WORDS] or [
        t.encode() for t in query.terms
    ]
    spans: dict[int, int] = {}
    for needle in needles:
        variants = {needle}
        if not needle.isascii():  # bytes.lower folds ASCII letters only
            word = needle.decode()
            variants |= {word.capitalize().encode(), word.upper().encode(), word.title().encode()}
        for variant in variants:
            index = lowered.find(variant)
            while index >= 0:
                start, end = _line_span(block, index)
                spans[start] = end
                index = lowered.find(variant, end)  # one hit makes the line a candidate
    return sorted(spans.items())


def _regex_spans(block: bytes, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """Lines whose text, JSON escapes undone, the regex matches. Anchored patterns (``^ $ \\A \\Z``)
    cannot be judged on a whole line, so every line is a candidate for them."""
    if ANCHORS_RE.search(pattern.pattern):
        return _all_lines(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `\/` and other escapes bytes do not know stay as they are
        try:
            decoded, _ = codecs.escape_decode(block.translate(_TO_SEPARATOR))
        except ValueError:
            return _all_lines(block)
    text = decoded.decode("utf-8", "replace")
    match = pattern.search(text)
    if match is None:
        return []
    separators = [m.start() for m in re.finditer(RECORD_SEPARATOR, text)]
    starts = _all_lines(block)
    lines: list[tuple[int, int]] = []
    while match is not None:
        line = bisect.bisect_left(separators, match.start())
        if line >= len(starts):
            break
        lines.append(starts[line])
        if line >= len(separators):
            break
        match = pattern.search(text, separators[line] + 1)
    return lines


def _all_lines(block: bytes) -> list[tuple[int, int]]:
    spans, start = [], 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end + 1
        spans.append((start, end))
        start = end
    return spans


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "role" in record else None


def _note_calls(block: bytes, tool: str, calls: set[str]) -> None:
    """The ids of ``tool``'s calls in ``block``: their results are not searched (recall's own results
    only repeat earlier hits)."""
    needle = b'"name":' + json.dumps(tool).encode()
    index = block.find(needle)
    while index >= 0:
        start, end = _line_span(block, index)
        record = _parse(block[start:end])
        for call in (record or {}).get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and function.get("name") == tool:
                calls.add(str(call.get("id")))
        index = block.find(needle, end)


def _searchable(record: Mapping[str, Any], skip_tool: str) -> str:
    text = content_text(record.get("content"))
    if record.get("role") == "user":
        text = strip_runtime_block(text)
    calls = record.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or function.get("name") == skip_tool:
            continue
        arguments = function.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        text += f"\n[calls {function.get('name')} {shown}]"
    return text


def _match(record: Mapping[str, Any], query: Query, skipped_calls: set[str]) -> Hit | None:
    role = str(record.get("role", ""))
    if query.role and role != query.role:
        return None
    call_id = str(record.get("tool_call_id") or "") if role == "tool" else ""
    if call_id and call_id in skipped_calls:
        return None
    text = _searchable(record, query.skip_tool)
    if not text:
        return None
    terms: tuple[str, ...] = ()
    if query.pattern is not None:
        matches = [m for m in query.pattern.finditer(text) if m.end() > m.start()]
        if not matches:
            return None
        start, end, score = matches[0].start(), matches[0].end(), 1.0 + math.log1p(len(matches))
    else:
        lowered = text.lower()
        present = [(term, count) for term in query.terms if (count := lowered.count(term))]
        if not present:
            return None
        score = 10.0 * len(present) + sum(min(count, 5) for _, count in present)
        start, term = min((lowered.find(term), term) for term, _ in present)
        end = start + len(term)
        terms = tuple(term for term, _ in present)
    return Hit(score, "", str(record.get("id", "")), role, 0, text, start, end, call_id=call_id, terms=terms)


def _weigh(hits: list[Hit], query: Query) -> None:
    """Rarer words count more: a word every message holds is worth less than one in three of them."""
    if query.pattern is not None or len(query.terms) < 2 or not hits:
        return
    frequency = {term: sum(1 for h in hits if term in h.terms) for term in query.terms}
    for hit in hits:
        hit.score += sum(math.log1p(len(hits) / frequency[t]) for t in hit.terms)


def tool_name(path: Path, offset: int, call_id: str) -> str:
    """The tool a result at ``offset`` answers, read off the nearest earlier line holding its call id
    (the assistant message) without parsing it: ``"id":"<call id>"``, then the first ``"name":"…"``."""
    start = max(0, offset - NAME_LOOKBACK)
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            block = handle.read(offset - start)
    except OSError:
        return ""
    index = block.rfind(b'"id":' + json.dumps(call_id, ensure_ascii=False).encode())
    if index < 0:
        return ""
    name_at = block.find(b'"name":"', index, index + 400)
    if name_at < 0:
        return ""
    name_at += len(b'"name":"')
    name_end = block.find(b'"', name_at, name_at + 200)
    return block[name_at:name_end].decode("utf-8", "replace") if name_end > 0 else ""


def _compaction_records(block: bytes) -> list[Record]:
    found: list[Record] = []
    index = block.find(COMPACTION_MARK)
    while index >= 0:
        start, end = _line_span(block, index)
        if start == index:
            try:
                obj = json.loads(block[start:end])
                kind = CompactionUndoRecord if obj.get("type") == "compaction_undo" else CompactionRecord
                found.append(kind.from_json(obj))
            except (ValueError, AttributeError, RecordError):
                pass
        index = block.find(COMPACTION_MARK, end)
    return found


def _folded_number(compactions: list[Record]) -> int | None:
    """The number of the last message the compaction in force folds (ids are ``m000123``)."""
    active = active_compactions(compactions)
    return id_number(active[-1].folded_through) if active else None


def id_number(message_id: str) -> int | None:
    if len(message_id) > 1 and message_id[0] == "m" and message_id[1:].isdigit():
        return int(message_id[1:])
    return None
