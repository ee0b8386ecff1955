"""Approval previews of file writes: a unified diff of what the call would change (docs/architecture.md §8).

The path is resolved exactly as the file tool will resolve it, so the preview shows the file the call
would write; a path the tool would refuse gets no preview (the tool says why). It is resolved for
reading: a protected file (catbuddy's config) is written only after the user approves this very call,
and the preview is what they approve.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from catbuddy.text import unified_diff
from catbuddy.tools.base import Preview, PreviewKind, ToolContext, ToolError
from catbuddy.tools.paths import resolve_path

PREVIEW_MAX_LINES = 400


def read_text(path: Path) -> str | None:
    """A regular file's text; None for anything else (a FIFO would block forever)."""
    try:
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def diff_preview(
    args: Mapping[str, Any], ctx: ToolContext, change: Callable[[str | None], str | None]
) -> Preview:
    """The diff between the file at ``args["path"]`` now (None: no readable file there) and what
    ``change`` makes of it (None: nothing useful to show)."""
    label = args.get("path")
    if not isinstance(label, str):
        return Preview()
    try:
        path = resolve_path(ctx, label, for_write=False)
    except ToolError:
        return Preview()
    old = read_text(path)
    new = change(old)
    if new is None:
        return Preview()
    lines = unified_diff(old or "", new, label).splitlines(keepends=True)
    if len(lines) > PREVIEW_MAX_LINES:
        lines = lines[:PREVIEW_MAX_LINES] + [f"\n… {len(lines) - PREVIEW_MAX_LINES} more diff lines\n"]
    return Preview("".join(lines), PreviewKind.DIFF)


def written_path(args: Mapping[str, Any], ctx: ToolContext) -> list[Path]:
    """The one file a call's ``path`` names, resolved as the tool will (for_write=False: without using up
    a one-use grant the tool itself needs); [] when the tool would refuse the path."""
    try:
        return [resolve_path(ctx, args.get("path"), for_write=False)]
    except ToolError:
        return []
