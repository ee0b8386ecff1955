"""Summarising session files for listing: no lock taken, and no JSON parsed except the meta line and
the lines up to the first user message (message lines are counted by prefix, in C).

A session whose meta line is lost is still listed: its id comes from the file name and its start from
its first record's time, and the summary says so (``problems``). Every line parsed goes through the
reader's bounded ``parse_line``, so a hostile line (huge, nested 100,000 deep) cannot break a listing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from catbuddy.messages import strip_runtime_block
from catbuddy.session.records import MESSAGE, UTF8_BOM, MetaRecord, RecordError, parse_line

SESSION_SUFFIX = ".jsonl"
# Record lines written by catbuddy always start with the type key, so listing can count messages by
# prefix without parsing JSON (a quote inside a string value is always escaped, so this cannot match
# inside content). The spaced form covers files written by json.dumps defaults.
_MESSAGE_LINE_PREFIXES = (b'{"type":"message"', b'{"type": "message"')
_USER_ROLE_KEYS = (b'"role":"user"', b'"role": "user"')
_META_LINE_PREFIXES = (b'{"type":"meta"', b'{"type": "meta"')
META_REBUILT = "no meta line: rebuilt it from the other records (the id from the file name)"


@dataclass(frozen=True)
class SessionInfo:
    id: str
    path: Path
    created_at: datetime | None  # from the meta line (UTC); None if the file has no readable meta
    last_activity: datetime  # the file's mtime (UTC): every append changes it
    message_count: int
    first_user_message: str  # without catbuddy's trailing "[runtime: …]" block
    size_bytes: int
    model: str
    work_root: str  # "" when the meta line is lost: the session still belongs to this folder's list
    problems: tuple[str, ...] = ()  # what listing had to repair (a rebuilt meta line)


def scan(path: Path, stat: os.stat_result) -> SessionInfo | None:
    """Summarise one session file without locking it and without parsing every line."""
    try:
        data = path.read_bytes()
    except OSError:
        return None  # vanished or unreadable while listing: not worth failing the whole list
    first_break = data.find(b"\n")
    meta = _parse_meta(data if first_break < 0 else data[:first_break]) or _find_meta(data)
    problems: tuple[str, ...] = ()
    session_id = path.name[: -len(SESSION_SUFFIX)]
    if meta is None and data.strip():
        meta = MetaRecord(session_id=session_id, created_at=_first_ts(data))
        problems = (META_REBUILT,)
    return SessionInfo(
        id=session_id,
        path=path,
        created_at=_parse_time(meta.created_at) if meta else None,
        last_activity=datetime.fromtimestamp(stat.st_mtime, UTC),
        message_count=_count_messages(data),
        first_user_message=_first_user_text(data),
        size_bytes=stat.st_size,
        model=meta.model if meta else "",
        work_root=meta.work_root if meta else "",
        problems=problems,
    )


def _find_meta(data: bytes) -> MetaRecord | None:
    """A meta record that is not on the first line: the one appended when a lost meta line was rebuilt."""
    for prefix in _META_LINE_PREFIXES:
        start = data.rfind(b"\n" + prefix)
        if start >= 0:
            end = data.find(b"\n", start + 1)
            meta = _parse_meta(data[start + 1 : end if end >= 0 else len(data)])
            if meta is not None:
                return meta
    return None


def _first_ts(data: bytes) -> str:
    """The time of the first record that has one (for a session whose meta line is lost)."""
    start = 0
    for _ in range(20):
        end = data.find(b"\n", start)
        obj = _parse(data[start : end if end >= 0 else len(data)])
        if obj is not None and isinstance(obj.get("ts"), str):
            return str(obj["ts"])
        if end < 0:
            break
        start = end + 1
    return ""


def _count_messages(data: bytes) -> int:
    """Message lines, counted by prefix in C; a torn line (no closing brace) never counts."""
    breaks = data.count(b"\n")
    joined = data.count(b'}\n{"type"')  # a whole record followed by the start of the next one
    if data.endswith((b"}\n", b"}")) and joined == breaks - data.endswith(b"\n"):
        # The usual case: every line is a whole record, so counting prefixes is exact.
        return sum(data.count(b"\n" + prefix) + data.startswith(prefix) for prefix in _MESSAGE_LINE_PREFIXES)
    # A crash (or an editor) left a torn or odd line somewhere: look at each line.
    return sum(
        1
        for line in data.split(b"\n")
        if line.startswith(_MESSAGE_LINE_PREFIXES) and line.rstrip().endswith(b"}")
    )


def _first_user_text(data: bytes) -> str:
    """The first user message's text. The role key can only appear unescaped as a real key (inside a
    JSON string its quotes are escaped), so searching for it jumps straight to the candidate lines."""
    start = 0
    while True:
        hit = -1
        for needle in _USER_ROLE_KEYS:
            found = data.find(needle, start, hit if hit >= 0 else len(data))
            hit = found if found >= 0 else hit
        if hit < 0:
            return ""
        line_start = data.rfind(b"\n", 0, hit) + 1
        line_end = data.find(b"\n", hit)
        line_end = len(data) if line_end < 0 else line_end
        text = _user_text(data[line_start:line_end])
        if text is not None:
            return text
        start = line_end


def _parse(line: bytes) -> dict[str, Any] | None:
    """One line as a JSON object, within the reader's bounds (size, nesting); None if it is not one."""
    try:
        return parse_line(line.strip())[0]
    except RecordError:
        return None


def _parse_meta(line: bytes) -> MetaRecord | None:
    obj = _parse(line.removeprefix(UTF8_BOM))
    if obj is None or obj.get("type") != "meta":
        return None
    try:
        return MetaRecord.from_json(obj)
    except RecordError:
        return None


def _user_text(line: bytes) -> str | None:
    obj = _parse(line)
    if obj is None or obj.get("type", MESSAGE) != MESSAGE or obj.get("role") != "user":
        return None
    content = obj.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = " ".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return strip_runtime_block(content).strip() if isinstance(content, str) else ""


def _parse_time(text: str) -> datetime | None:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)
