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
import mmap
import os
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
ANCHORS_RE = re.compile(r"(?<!\\)[\^$]|\\[AZ]")
RECORD_SEPARATOR = "\x1e"  # JSON escapes it inside strings: it never occurs raw in a record line
_TO_SEPARATOR = bytes.maketrans(b"\n", RECORD_SEPARATOR.encode())


@dataclass
class Query:
    terms: list[str] = field(default_factory=list)  # lower-case words and phrases
    pattern: re.Pattern[str] | None = None
    role: str = ""  # only messages of this role ("" for all)
    skip_tool: str = ""  # the calls (and results) of this tool are not searched (recall: its own)


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
    tool: str = ""  # the tool a result answers ('' when not found)
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
    position = 0  # messages before the current block
    offset = 0
    mark = MESSAGE_MARK
    for index, block in enumerate(_blocks(path)):
        if index == 0 and MESSAGE_MARK not in block and SPACED_MESSAGE_MARK in block:
            mark = SPACED_MESSAGE_MARK
        compactions += _compaction_records(block)
        counted_to, counted = 0, position
        for start, end in _candidate_spans(block, query):
            counted += block.count(mark, counted_to, start)
            counted_to = start
            record = _parse(block[start:end])
            if record is None or record.get("type", "message") != "message":
                continue
            tool = ""
            if record.get("role") == "tool":
                tool = call_name(block, start, str(record.get("tool_call_id") or ""))
                if query.skip_tool and tool == query.skip_tool:
                    continue  # recall's own results only repeat earlier hits
            hit = _match(record, query)
            if hit is not None:
                hit.session, hit.position, hit.offset, hit.tool = (
                    session_id,
                    counted + 1,
                    offset + start,
                    tool,
                )
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
    """The file in blocks of whole lines, each ending with a newline (a torn last line too), read
    through mmap so a block is copied once."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return
        with mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ) as mapped:
            start = 0
            while start < size:
                end = min(size, start + BLOCK_BYTES)
                if end < size:
                    cut = mapped.rfind(b"\n", start, end)
                    if cut < 0:  # one line longer than a block
                        cut = mapped.find(b"\n", end)
                    end = size if cut < 0 else cut + 1
                block = mapped[start:end]
                yield block if block.endswith(b"\n") else block + b"\n"
                start = end


def _line_span(block: bytes, index: int) -> tuple[int, int]:
    start = block.rfind(b"\n", 0, index) + 1
    end = block.find(b"\n", index)
    return start, len(block) if end < 0 else end + 1


def _candidate_spans(block: bytes, query: Query) -> list[tuple[int, int]]:
    """The lines of ``block`` that may hold a match, in order (each is checked exactly later)."""
    if query.pattern is not None:
        literal = required_literal(query.pattern)
        if literal is None:
            return _regex_spans(block, query.pattern)
        if query.pattern.flags & re.IGNORECASE:
            return _literal_spans(block.lower(), block, [literal.lower()])
        return _literal_spans(block, block, [literal])
    needles = [t.encode() for t in query.terms if t not in STRUCTURAL_WORDS] or [
        t.encode() for t in query.terms
    ]
    return _literal_spans(block.lower(), block, needles)


def _literal_spans(lowered: bytes, block: bytes, needles: list[bytes]) -> list[tuple[int, int]]:
    """Lines of ``block`` where ``lowered`` (the block, or the block lowered) holds one of ``needles``."""
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
    """Lines whose text, JSON escapes undone, the regex matches. An anchored pattern (``^ $ \\A \\Z``)
    cannot be judged on a whole record line (a message's text starts inside it), so its candidates
    come from the pattern without its anchors, which matches wherever the anchored one does."""
    prefilter = prefilter_pattern(pattern)
    if prefilter is None:
        return _all_lines(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `\/` and other escapes bytes do not know stay as they are
        try:
            decoded, _ = codecs.escape_decode(block.translate(_TO_SEPARATOR))
        except ValueError:
            return _all_lines(block)
    text = decoded.decode("utf-8", "replace")
    match = prefilter.search(text)
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
        match = prefilter.search(text, separators[line] + 1)
    return lines


MIN_LITERAL = 3
# Characters JSON writes escaped: a literal holding one cannot be found in the raw line as it is.
_ESCAPED_IN_JSON = frozenset('"\\') | frozenset(chr(c) for c in range(0x20)) | {"\x7f"}


def required_literal(pattern: re.Pattern[str]) -> bytes | None:
    """The longest run of plain characters every match of ``pattern`` contains (at its top level, no
    alternation), as UTF-8, when it is long enough to search for and JSON writes it as it is."""
    try:
        import importlib

        _parser: Any = importlib.import_module("re._parser")  # the stdlib's own regex parser (private)
        items = list(_parser.parse(pattern.pattern))
        literal_op, branch_op = _parser.LITERAL, _parser.BRANCH
    except Exception:  # another Python, or a parse the compiled pattern did not need
        return None
    best, run = "", ""
    for op, arg in items:
        if op == branch_op:
            return None
        if op == literal_op and chr(arg) not in _ESCAPED_IN_JSON:
            run += chr(arg)
            best = max(best, run, key=len)
        else:
            run = ""
    if len(best) < MIN_LITERAL or (pattern.flags & re.IGNORECASE and not best.isascii()):
        return None
    return best.encode("utf-8")


def prefilter_pattern(pattern: re.Pattern[str]) -> re.Pattern[str] | None:
    """``pattern``, or the same without its anchors when it has any; None when that cannot be done
    safely (an anchor inside a negative lookaround would become stricter without it)."""
    source = pattern.pattern
    if not ANCHORS_RE.search(source):
        return pattern
    if "(?!" in source or "(?<!" in source:
        return None
    kept: list[str] = []
    index, in_class = 0, False
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            pair = source[index : index + 2]
            if in_class or pair not in ("\\A", "\\Z"):
                kept.append(pair)
            index += 2
            continue
        if in_class:
            in_class = char != "]" or bool(kept and kept[-1] in ("[", "[^"))
            kept.append(char)
        elif char == "[":
            in_class = True
            if source[index + 1 : index + 2] == "^":
                kept.append("[^")
                index += 2
                continue
            kept.append(char)
        elif char not in "^$":
            kept.append(char)
        index += 1
    try:
        return re.compile("".join(kept), pattern.flags)
    except re.error:
        return None


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


def _searchable(record: Mapping[str, Any], skip_tool: str) -> str:
    text = content_text(record.get("content"))
    if record.get("role") == "user":
        text = strip_runtime_block(text)
    calls = record.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or (skip_tool and function.get("name") == skip_tool):
            continue
        arguments = function.get("arguments")
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        text += f"\n[calls {function.get('name')} {shown}]"
    return text


def _match(record: Mapping[str, Any], query: Query) -> Hit | None:
    role = str(record.get("role", ""))
    if query.role and role != query.role:
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
    return Hit(score, "", str(record.get("id", "")), role, 0, text, start, end, terms=terms)


def _weigh(hits: list[Hit], query: Query) -> None:
    """Rarer words count more: a word every message holds is worth less than one in three of them."""
    if query.pattern is not None or len(query.terms) < 2 or not hits:
        return
    frequency = {term: sum(1 for h in hits if term in h.terms) for term in query.terms}
    for hit in hits:
        hit.score += sum(math.log1p(len(hits) / frequency[t]) for t in hit.terms)


def call_name(block: bytes, line_start: int, call_id: str) -> str:
    """The tool a result answers, read off the nearest earlier line of ``block`` holding its call id
    (the assistant message, at most ``NAME_LOOKBACK`` bytes back) without parsing it: ``"id":"<call
    id>"``, then the first ``"name":"…"``. '' when it is not there."""
    if not call_id:
        return ""
    needle = b'"id":' + json.dumps(call_id, ensure_ascii=False).encode()
    index = block.rfind(needle, max(0, line_start - NAME_LOOKBACK), line_start)
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
