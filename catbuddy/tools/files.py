"""File tools: read_file, write_file and edit_file, all behind the path guard (list_dir: list_dir.py).

Each runs in a worker thread (file work never blocks the event loop), touches regular files only
(``fileio`` refuses FIFOs, devices and sockets) and reads a bounded number of bytes.
"""

from __future__ import annotations

import asyncio
import difflib
import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.text import (
    cut_line,
    decode_text,
    diff_stat,
    line_count,
    truncate_lines,
    unified_diff,
    valid_text,
)
from catbuddy.tool_meta import Change, FactKind, LedgerFact, PathChange, ToolMeta, ToolStatus
from catbuddy.tools.base import Preview, Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.edit_ladder import STAGE_NOTES, Ambiguous, Found, Stage, find_edit
from catbuddy.tools.fileio import (
    LEGACY_ENCODINGS,
    check_regular,
    count_remaining_lines,
    detect_encoding,
    iter_lines,
    open_regular,
    read_bytes,
    write_bytes,
)
from catbuddy.tools.paths import display_path, resolve_path
from catbuddy.tools.preview import diff_preview, written_path

READ_MAX_LINES = 2_000
READ_MAX_BYTES = 256 * 1024
READ_MAX_LINE_CHARS = 2_000
READ_MAX_LINE_BYTES = READ_MAX_LINE_CHARS * 4 + 4  # enough for 2,000 characters of any UTF-8
EDIT_MAX_BYTES = 16 * 1024 * 1024  # edit_file reads the whole file; larger ones are refused
DIFF_MAX_BYTES = 4 * 1024 * 1024  # write_file shows a diff of the old content up to this size
BINARY_SNIFF_BYTES = 8 * 1024
DIFF_MAX_LINES = 200  # diff lines returned to the model; the UI gets the whole diff
CLOSEST_MAX_LINES = 30
IGNORED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
     "dist", "build", ".tox", ".hg", ".svn"}
)  # fmt: skip
IGNORED_GLOBS = ("*.egg-info",)


def is_ignored_dir(name: str) -> bool:
    return name in IGNORED_DIRS or any(fnmatch.fnmatch(name, g) for g in IGNORED_GLOBS)


# --- text files with their encoding and newlines ----------------------------------------------------


@dataclass
class TextFile:
    text: str  # newlines normalised to "\n" when the file uses CRLF throughout
    bom: bool
    crlf: bool
    raw: bool = False  # binary or not UTF-8: undecodable bytes kept as surrogates, exact edits only

    def encode(self, text: str) -> bytes:
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        bom = b"\xef\xbb\xbf" if self.bom else b""
        if self.raw:
            return bom + text.encode("utf-8", "surrogateescape")
        return bom + valid_text(text).encode("utf-8")


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def load_text(path: Path, shown: str, *, raw_ok: bool = False) -> TextFile:
    """The file as text; a binary or non-UTF-8 file is refused, or with ``raw_ok`` kept byte for byte
    (undecodable bytes as surrogates) for exact edits only."""
    data = read_bytes(path, shown, EDIT_MAX_BYTES)
    bom = data.startswith(b"\xef\xbb\xbf")
    if looks_binary(data):
        if not raw_ok:
            raise ToolError(f"{shown} is a binary file; read_file and edit_file only handle text.")
        return TextFile(data.decode("utf-8", "surrogateescape"), False, False, raw=True)
    try:
        text = data[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        if raw_ok:
            return TextFile(data[3 if bom else 0 :].decode("utf-8", "surrogateescape"), bom, False, raw=True)
        raise ToolError(
            f"{shown} is not UTF-8 text (byte {exc.start}); it cannot be read or edited as text."
        ) from None
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    return TextFile(text.replace("\r\n", "\n") if crlf else text, bom, crlf)


def not_found(path: Path, shown: str) -> ToolError:
    """A missing file, with the names in its folder that look like what was meant."""
    folder = path.parent
    hint = ""
    if folder.is_dir():
        names = [p.name for p in folder.iterdir()]
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.5)
        if close:
            hint = " Did you mean: " + ", ".join(close) + "?"
    else:
        hint = " Its folder does not exist either; use list_dir to look around."
    return ToolError(f"File not found: {shown}.{hint}")


def number_lines(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>6}\t{cut_line(line, READ_MAX_LINE_CHARS)}" for n, line in enumerate(lines, first))


def int_arg(args: dict[str, Any], key: str, default: int, minimum: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"`{key}` must be an integer ≥ {minimum}, got {value!r}.")
    return value


# --- read_file --------------------------------------------------------------------------------------


class ReadFileTool(Tool):
    name = "read_file"
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the work root."},
            "offset": {"type": "integer", "description": "First line to read (1-based). Default 1."},
            "limit": {"type": "integer", "description": "Maximum number of lines. Default and cap 2000."},
        },
        "required": ["path"],
    }
    kind = ToolKind.READ
    microcompactable = True

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        lines = meta.extra.get("lines")
        if meta.status is ToolStatus.OK and isinstance(lines, int):
            return f"{lines:,} line{'' if lines == 1 else 's'}"
        return super().result_summary(args, meta)

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        path = args.get("path")
        if meta.status is not ToolStatus.OK or not isinstance(path, str) or not path.strip():
            return []
        return [LedgerFact(FactKind.READ, path)]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._read, args, ctx)

    def _read(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.get("path"), for_write=False)
        shown = display_path(ctx, path)
        offset = int_arg(args, "offset", 1, 1)
        limit = min(int_arg(args, "limit", READ_MAX_LINES, 1), READ_MAX_LINES)
        info = check_regular(path, shown, "read")
        if info is None:
            default = ctx.workspace.shipped_default_for(path)
            if default is None:
                raise not_found(path, shown)
            return _read_default(default, shown, offset, limit)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; use list_dir to see what it holds.")
        read = _read_lines(path, shown, offset, limit)
        if read.total == 0:
            return ToolResult(f"{shown} is empty.", meta={"lines": 0})
        if not read.lines:
            raise ToolError(f"offset {offset} is past the end of {shown}, which has {read.total:,} lines.")
        body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(read.lines, offset))
        last = offset + len(read.lines) - 1
        if last < read.total:
            why = "the 256 KB limit" if read.stop == "bytes" else f"{len(read.lines):,} lines"
            body += (
                f"\n\n[Showing lines {offset:,}-{last:,} of {read.total:,} ({why}). "
                f"Use offset={last + 1} to read on.]"
            )
        if read.encoding != "utf-8":
            body += (
                f"\n\n[{shown} is not UTF-8: read as {LEGACY_ENCODINGS[read.encoding]}, the encoding its "
                "bytes fit; edit_file cannot change it (it writes UTF-8 only).]"
            )
        elif read.replaced:
            body += (
                f"\n\n[{read.replaced:,} of the lines shown hold bytes that are not UTF-8, shown as \ufffd; "
                "the file is not UTF-8 text, so edit_file cannot change it.]"
            )
        meta: dict[str, Any] = {"lines": len(read.lines), "total_lines": read.total}
        if read.encoding != "utf-8":
            meta["encoding"] = read.encoding
        return ToolResult(body, meta=meta)


def _read_default(text: str, shown: str, offset: int, limit: int) -> ToolResult:
    """A workspace file that does not exist yet reads as the shipped default catbuddy uses in its place."""
    lines = text.splitlines()
    shown_lines = lines[offset - 1 : offset - 1 + limit]
    if lines and not shown_lines:
        raise ToolError(f"offset {offset} is past the end of {shown}, which has {len(lines):,} lines.")
    body = number_lines(shown_lines, offset)
    note = (
        f"[{shown} does not exist yet: this is the shipped default catbuddy uses in its place. "
        "edit_file or write_file creates the file.]"
    )
    return ToolResult(f"{body}\n\n{note}", meta={"lines": len(shown_lines), "default": True})


@dataclass
class _Read:
    lines: list[str]  # as shown: long lines already cut
    total: int  # the file's line count
    stop: str  # what ended the read early: "lines", "bytes" or ""
    replaced: int  # lines shown that held bytes that are not UTF-8
    encoding: str = "utf-8"  # what the lines were decoded as (detected from the file's head)


def _read_lines(path: Path, shown: str, offset: int, limit: int) -> _Read:
    """The lines wanted and the file's line count, reading at most a line's worth of bytes at a time."""
    lines: list[str] = []
    used = 0
    stop = ""
    total = 0
    replaced = 0
    with open_regular(path, shown) as handle:
        head = handle.read(BINARY_SNIFF_BYTES)
        if looks_binary(head):
            raise ToolError(f"{shown} is a binary file; read_file only reads text.")
        encoding = detect_encoding(head.removeprefix(b"\xef\xbb\xbf"))
        handle.seek(0)
        for line in iter_lines(handle, READ_MAX_LINE_BYTES, encoding):
            total = line.number
            if total < offset:
                continue
            text = line.text
            if line.cut_bytes:
                text = f"{text[:READ_MAX_LINE_CHARS]} [... line cut, {line.cut_bytes:,} more bytes]"
            else:
                text = cut_line(text, READ_MAX_LINE_CHARS)
            size = len(text.encode())
            if len(lines) >= limit:
                stop = "lines"
            elif used + size > READ_MAX_BYTES and lines:
                stop = "bytes"
            if stop:
                total += count_remaining_lines(handle)
                break
            used += size + 8
            lines.append(text)
            replaced += line.replaced
    return _Read(lines, total, stop, replaced, encoding)


# --- write_file -------------------------------------------------------------------------------------


class WriteFileTool(Tool):
    name = "write_file"
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the work root."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
    }
    kind = ToolKind.EDIT

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        return diff_preview(args, ctx, lambda _old: str(args.get("content", "")))

    def writes(self, args: Mapping[str, Any], ctx: ToolContext) -> list[Path] | None:
        return written_path(args, ctx)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._write, args, ctx)

    def _write(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        content = args.get("content")
        if not isinstance(content, str):
            # Never turn a missing argument into an empty file (a cut-off call would wipe the file).
            raise ToolError(
                "`content` is missing or not a string; nothing was written. Send the full content."
            )
        path = resolve_path(ctx, args.get("path"), for_write=True)
        shown = display_path(ctx, path)
        info = check_regular(path, shown, "write")
        if info is not None and path.is_dir():
            raise ToolError(f"{shown} is a directory; give a file path.")
        existed = info is not None
        before: str | None = None
        if existed and info is not None and info.st_size <= DIFF_MAX_BYTES:
            old = read_bytes(path, shown, DIFF_MAX_BYTES)
            before = None if looks_binary(old) else decode_text(old)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError(f"cannot create the folder of {shown} ({exc.strerror or exc}).") from None
        content = valid_text(content)  # a JSON escape can carry a lone surrogate: stored as U+FFFD
        data = content.encode("utf-8")
        write_bytes(path, shown, data)
        lines = line_count(content)
        size = f"{lines:,} lines, {len(data):,} bytes"
        if not existed:
            created = PathChange(shown, Change.CREATED, lines, 0)
            return ToolResult(f"Created {shown} ({size}).", meta={"created": True}, paths=[created])
        if before == content:
            return ToolResult(f"Wrote {shown} ({size}); the content was unchanged.", meta={"created": False})
        if before is None:  # binary or too large to diff: what it held is not known
            change = PathChange(shown, Change.MODIFIED, lines, None)
            return ToolResult(f"Overwrote {shown} ({size}).", meta={"created": False}, paths=[change])
        diff = unified_diff(before, content, shown)
        change = PathChange(shown, Change.MODIFIED, *diff_stat(diff))
        return ToolResult(
            f"Overwrote {shown} ({size}).", display=diff, meta={"created": False}, paths=[change]
        )


# --- edit_file --------------------------------------------------------------------------------------


def path_alias(args: Mapping[str, Any]) -> dict[str, Any]:
    """``file_path`` (the name other agents' edit tools use) accepted for ``path``."""
    out = dict(args)
    if out.get("path") is None and isinstance(out.get("file_path"), str):
        out["path"] = out.pop("file_path")
    return out


@dataclass
class PlannedEdit:
    updated: str
    found: Found | None  # None: old_string empty on an empty or missing file (the edit writes it)


def plan_edit(file: TextFile, old: str, new: str, replace_all: bool, shown: str) -> PlannedEdit:
    """What the file becomes, by the matching ladder (tools/edit_ladder.py); ToolError when no stage finds
    old_string exactly once. The file's line endings and final newline stay as they were."""
    old, new = valid_text(old), valid_text(new)
    if file.crlf or "\r" not in file.text:  # the model's CRLF never lands in an LF file
        old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    text = file.text
    if not old:
        if text.strip():
            raise ToolError(
                f"`old_string` is empty but {shown} is not. Quote the text to replace, or use write_file "
                "to rewrite the whole file."
            )
        return PlannedEdit(new, None)
    if old == new:
        raise ToolError("`old_string` and `new_string` are the same; nothing to change.")
    try:
        found = find_edit(text, old, new, replace_all=replace_all, fuzzy=not file.raw)
    except Ambiguous as many:
        raise ToolError(
            f"old_string occurs {many.count} times in {shown} (lines {', '.join(map(str, many.lines))}). "
            "Include more surrounding lines to make it unique, or set replace_all=true to replace every one."
        ) from None
    if found is None:
        message = _no_match_message(text, old, shown)
        if file.raw:
            message += f" ({shown} is not UTF-8 text, so only an exact match is tried.)"
        raise ToolError(message)
    updated = found.apply(text)
    if text.endswith("\n") and updated and not updated.endswith("\n"):
        updated += "\n"  # the file's final newline stays, whatever new_string ends with
    elif text and not text.endswith("\n") and updated.endswith("\n"):
        updated = updated[:-1]
    return PlannedEdit(updated, found)


class EditFileTool(Tool):
    name = "edit_file"
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the work root."},
            "old_string": {"type": "string", "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."},
        },
        "required": ["path", "old_string", "new_string"],
    }
    kind = ToolKind.EDIT

    def normalize_args(self, args: dict[str, Any]) -> dict[str, Any]:
        return path_alias(args)

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        old_string, new_string = args.get("old_string"), args.get("new_string")

        def edited(old: str | None) -> str | None:
            if old is None or not isinstance(old_string, str) or not isinstance(new_string, str):
                return None
            crlf = "\r\n" in old and old.count("\r\n") == old.count("\n")
            file = TextFile(old.replace("\r\n", "\n") if crlf else old, False, crlf)
            try:
                return plan_edit(file, old_string, new_string, bool(args.get("replace_all")), "").updated
            except ToolError:
                return None

        return diff_preview(path_alias(args), ctx, edited)

    def writes(self, args: Mapping[str, Any], ctx: ToolContext) -> list[Path] | None:
        return written_path(path_alias(args), ctx)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._edit, path_alias(args), ctx)

    def _edit(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        old, new = args.get("old_string"), args.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            raise ToolError("`old_string` and `new_string` must both be strings.")
        if old == new:
            raise ToolError("`old_string` and `new_string` are the same; nothing to change.")
        path = resolve_path(ctx, args.get("path"), for_write=True)
        shown = display_path(ctx, path)
        default = None
        missing = False
        if check_regular(path, shown, "edit") is None:
            # A workspace file still shipped as a default: edit the default; the edit creates the file.
            default = ctx.workspace.shipped_default_for(path)
            if default is None:
                if old:
                    raise not_found(path, shown)
                missing = True  # an empty old_string creates the file
        elif path.is_dir():
            raise ToolError(f"{shown} is a directory.")
        if missing:
            file = TextFile("", False, False)
        elif default is not None:
            file = TextFile(default, False, False)
        else:
            file = load_text(path, shown, raw_ok=True)
        plan = plan_edit(file, old, new, bool(args.get("replace_all")), shown)
        text, updated = file.text, plan.updated
        if default is not None or missing:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ToolError(f"cannot create the folder of {shown} ({exc.strerror or exc}).") from None
        write_bytes(path, shown, file.encode(updated))
        lines = line_count(updated)
        if plan.found is None:
            change = PathChange(shown, Change.CREATED if missing else Change.MODIFIED, lines, 0)
            verb = "Created" if missing else "Wrote"
            return ToolResult(f"{verb} {shown} ({lines:,} lines).", meta={"created": missing}, paths=[change])
        found = plan.found
        diff = unified_diff(text, updated, shown)
        replaced = len(found.spans)
        first_line = text[: found.first].count("\n") + 1
        verb = (
            f"Created {shown} from the shipped default and edited it"
            if default is not None
            else f"Edited {shown}"
        )
        summary = f"{verb}: replaced {replaced} occurrence{'s' if replaced > 1 else ''} (first at line {first_line})."
        if found.stage is not Stage.EXACT:
            summary += f" Matched {found.stage.value}: {STAGE_NOTES[found.stage]}."
        capped = truncate_lines(diff, DIFF_MAX_LINES, "Read the file to see the rest.")
        if default is not None:
            change = PathChange(shown, Change.CREATED, lines, 0)
        else:
            change = PathChange(shown, Change.MODIFIED, *diff_stat(diff))
        return ToolResult(
            f"{summary}\n\n{capped}",
            display=diff,
            meta={"replacements": replaced, "match": found.stage.value},
            paths=[change],
        )


def _no_match_message(text: str, old: str, shown: str) -> str:
    closest = closest_match(text, old)
    message = f"old_string was not found in {shown}. {closest}"
    if closest.startswith("The closest match"):
        message += "\nCopy the exact text (without the line-number prefix) into old_string and retry."
    return message


def closest_match(text: str, wanted: str) -> str:
    """The region of the file most like ``wanted``, numbered, so the model can copy the real text."""
    lines = text.split("\n")
    want = wanted.strip("\n").split("\n")
    size = max(1, min(len(want), len(lines)))
    target = "\n".join(want)
    scored: list[tuple[float, int]] = []
    for start in range(0, max(len(lines) - size + 1, 1)):
        window = "\n".join(lines[start : start + size])
        scored.append((difflib.SequenceMatcher(None, target, window).quick_ratio(), start))
    best_ratio, best = 0.0, 0
    for _, start in sorted(scored, reverse=True)[:8]:
        ratio = difflib.SequenceMatcher(None, target, "\n".join(lines[start : start + size])).ratio()
        if ratio > best_ratio:
            best_ratio, best = ratio, start
    if best_ratio < 0.3:
        return "Nothing in the file is close to it; read the file and copy the exact text."
    region = lines[best : best + min(size, CLOSEST_MAX_LINES)]
    return (
        f"The closest match (lines {best + 1}-{best + len(region)}, {best_ratio:.0%} similar) is:\n"
        f"{number_lines(region, best + 1)}"
    )
