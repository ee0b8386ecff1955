"""The version log as people read it: `catbuddy memory log|diff|undo` and `/memory log|diff|undo`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.versions import Change, MemoryVersions
from catbuddy.workspace import Workspace


def _when(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso or "?"


def versions_of(workspace: Workspace) -> MemoryVersions:
    return MemoryVersions(MemoryPaths.of(workspace))


def change_line(change: Change) -> str:
    files = "  ".join(f"{r.file} +{r.added} −{r.removed}" for r in change.records)
    sessions = ", ".join(change.sessions)
    note = ""
    if change.undoes is not None:
        note = f"  (undoes #{change.undoes})"
    elif change.undone_by is not None:
        note = f"  (undone by #{change.undone_by})"
    tail = f"  sessions: {sessions}" if sessions else ""
    return f"#{change.id:<4} {_when(change.at):<16}  {change.source:<16} {files}{note}{tail}"


CLI_PREFIX, APP_PREFIX = "catbuddy memory", "/memory"


def format_log(workspace: Workspace, limit: int | None = None, prefix: str = CLI_PREFIX) -> str:
    history = versions_of(workspace).history()
    lines = [f"warning: {p}" for p in history.problems]
    if not history.changes:
        lines.append(
            "No memory changes yet. Dream, /memory and /edit in the app, and the model's edits of a MEMORY.md "
            "are logged here."
        )
        return "\n".join(lines)
    changes = history.changes[-limit:] if limit else history.changes
    lines += [change_line(change) for change in reversed(changes)]
    lines.append("")
    lines.append(f"Show one: {prefix} diff [N] · roll back the newest: {prefix} undo")
    return "\n".join(lines)


def log_json(workspace: Workspace) -> list[dict[str, Any]]:
    history = versions_of(workspace).history()
    return [
        {
            "change": change.id,
            "at": change.at,
            "source": change.source,
            "sessions": list(change.sessions),
            "undoes": change.undoes,
            "undone_by": change.undone_by,
            "files": [record.to_json() for record in change.records],
        }
        for change in history.changes
    ]


def format_diff(workspace: Workspace, change_id: int | None) -> str:
    """Raises VersionError (no such change, pruned) with a message for the user."""
    change, diff = versions_of(workspace).diff(change_id)
    header = change_line(change)
    return f"{header}\n\n{diff.rstrip()}" if diff.strip() else f"{header}\n\n(no textual difference)"


def undo_last(workspace: Workspace, prefix: str = CLI_PREFIX, sessions: tuple[str, ...] = ()) -> str:
    """Raises VersionError when there is nothing to undo."""
    result = versions_of(workspace).undo(sessions)
    undone = result.undone
    paths = ", ".join(record.path for record in undone.records)
    lines = [f"Undid change #{undone.id} ({undone.source}, {_when(undone.at)}): restored {paths}."]
    lines += result.notes
    if result.change is not None:
        lines.append(f"The undo is change #{result.change.id}; `{prefix} diff` shows it.")
    return "\n".join(lines)
