"""Approvals: what the user is shown before an exec or a file write, and what the model is told after."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catbuddy.agent.events import ApprovalChoice, ApprovalDecision
from catbuddy.text import unified_diff
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.paths import resolve_path

PREVIEW_MAX_LINES = 400
HEADLESS_REFUSAL = (
    "Refused: `{tool}` needs approval in the '{mode}' approval mode, and catbuddy is running without anyone "
    "to ask (headless). Do the task without it if you can; otherwise tell the user to rerun with "
    "`--approval auto-edit` (file edits) or `--approval yolo` (commands too)."
)


def refusal_text(decision: ApprovalDecision) -> str:
    if decision.choice is ApprovalChoice.DENY_WITH_NOTE and decision.note.strip():
        return f"The user denied this call and said: {decision.note.strip()}"
    return "The user denied this call. Do not retry it as is; ask the user or take another way."


def _read(path: Path) -> str | None:
    """A regular file's text; None for anything else (a FIFO would block the event loop forever)."""
    try:
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _diff(old: str, new: str, label: str) -> str:
    lines = unified_diff(old, new, label).splitlines(keepends=True)
    if len(lines) > PREVIEW_MAX_LINES:
        lines = lines[:PREVIEW_MAX_LINES] + [f"\n… {len(lines) - PREVIEW_MAX_LINES} more diff lines\n"]
    return "".join(lines)


def preview_for(tool: str, args: Mapping[str, Any], ctx: ToolContext) -> str:
    """The command for exec, a unified diff for edits; '' when nothing useful can be shown.

    The path is resolved exactly as the file tool will resolve it, so the preview shows the file
    the call would write; a path the tool would refuse gets no preview (the tool says why). It is
    resolved for reading: a protected file (catbuddy's config) is written only after the user approves
    this very call, and the preview is what they approve."""
    if tool == "exec":
        return str(args.get("command", ""))
    path_arg = args.get("path")
    if not isinstance(path_arg, str):
        return ""
    try:
        path = resolve_path(ctx, path_arg, for_write=False)
    except ToolError:
        return ""
    if tool == "write_file":
        new = str(args.get("content", ""))
        return _diff(_read(path) or "", new, path_arg)
    if tool == "edit_file":
        old = _read(path)
        old_string, new_string = args.get("old_string"), args.get("new_string")
        if (
            old is None
            or not isinstance(old_string, str)
            or not isinstance(new_string, str)
            or not old_string
        ):
            return ""
        count = -1 if args.get("replace_all") else 1
        return _diff(old, old.replace(old_string, new_string, count), path_arg)
    return ""
