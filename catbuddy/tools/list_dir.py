"""The list_dir tool: a directory as an indented tree, to a depth, skipping what list_dir ignores."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.tool_meta import ToolMeta, ToolStatus
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.files import int_arg, is_ignored_dir, not_found
from catbuddy.tools.paths import display_path, resolve_path

LIST_MAX_ENTRIES = 500
LIST_DEFAULT_DEPTH = 2
LIST_MAX_DEPTH = 10
LIST_COUNT_CEILING = 20_000  # entries counted before we stop walking


class ListDirTool(Tool):
    name = "list_dir"
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": 'Directory, relative to the work root. Default ".".'},
            "depth": {"type": "integer", "description": "How many levels to show (1-10). Default 2."},
        },
        "required": [],
    }
    kind = ToolKind.READ
    microcompactable = True

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        entries = meta.extra.get("entries")
        if meta.status is ToolStatus.OK and isinstance(entries, int):
            return f"{entries:,} entr{'y' if entries == 1 else 'ies'}"
        return super().result_summary(args, meta)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._list, args, ctx)

    def _list(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.get("path") or ".", for_write=False)
        shown = display_path(ctx, path)
        depth = min(int_arg(args, "depth", LIST_DEFAULT_DEPTH, 1), LIST_MAX_DEPTH)
        if not path.exists():
            raise not_found(path, shown)
        if not path.is_dir():
            raise ToolError(f"{shown} is a file, not a directory; use read_file.")
        entries: list[str] = []
        _walk(path, depth, 0, entries)
        header = "./" if path == ctx.work_root.resolve() else f"{shown}/"
        if not entries:
            return ToolResult(f"{header}\n(empty)")
        left_out = len(entries) - LIST_MAX_ENTRIES
        body = header + "\n" + "\n".join(entries[:LIST_MAX_ENTRIES])
        if left_out > 0:
            more = f"{left_out:,}" if len(entries) < LIST_COUNT_CEILING else f"more than {left_out:,}"
            body += f"\n[... {more} more entries not shown; list a subfolder or use a smaller depth.]"
        return ToolResult(
            body, meta={"entries": min(len(entries), LIST_MAX_ENTRIES), "left_out": max(left_out, 0)}
        )


def _walk(folder: Path, depth: int, level: int, out: list[str]) -> None:
    """Append the entries below ``folder`` (up to a ceiling, so a huge tree is only counted so far)."""
    try:
        children = sorted(os.scandir(folder), key=lambda e: (not _is_dir(e), e.name.lower()))
    except OSError as exc:
        out.append(f"{'  ' * (level + 1)}[cannot list: {exc.strerror}]")
        return
    for entry in children:
        if len(out) >= LIST_COUNT_CEILING:
            return
        is_dir = _is_dir(entry)
        if is_dir and is_ignored_dir(entry.name):
            continue
        link = entry.is_symlink()
        suffix = ("@" if link else "") + ("/" if is_dir else "")
        out.append(f"{'  ' * (level + 1)}{entry.name}{suffix}")
        if is_dir and not link and level + 1 < depth:  # symlinked folders are not followed: no loops
            _walk(Path(entry.path), depth, level + 1, out)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False
