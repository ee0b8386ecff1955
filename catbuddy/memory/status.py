"""What ``/context`` and ``catbuddy context`` say about memory: pending entries and the last Dream."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from catbuddy.config import Settings
from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.state import DreamState
from catbuddy.workspace import Workspace


def memory_status(workspace: Workspace, settings: Settings) -> dict[str, Any]:
    """Pending entries, the cursor, Dream's mode and failures, and the last Dream (plain data)."""
    paths = MemoryPaths.of(workspace)
    journal = Journal(paths)
    state = DreamState.load(paths.state)
    pending = journal.pending()
    return {
        "mode": settings.memory.dream,
        "pending_entries": len(pending.entries),
        "cursor": journal.cursor()[0],
        "failures": state.failures,
        "paused": state.paused(settings.memory.max_dream_failures),
        "last_dream": None if state.last is None else vars(state.last),
        "journal": str(paths.journal),
        "problems": pending.problems + state.problems,
    }


def _when(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def format_status(status: dict[str, Any]) -> str:
    """Two lines: the entries waiting for Dream, and how the last Dream ended."""
    pending = status["pending_entries"]
    mode = status["mode"]
    first = f"memory: {pending} entr{'y' if pending == 1 else 'ies'} pending for Dream (cursor {status['cursor']}); Dream {mode}"
    if status.get("paused"):
        first += f", paused after {status['failures']} failed runs (run it by hand to resume)"
    elif status.get("running"):
        first += ", running now"
    first += "".join(f"\n! {problem}" for problem in status.get("problems") or ())
    last = status.get("last_dream")
    if not last:
        return first + "\nlast Dream: never"
    counts = f" +{last['added']} −{last['removed']} ~{last['updated']}" if last["status"] == "applied" else ""
    change = f" (change #{last['change']})" if last.get("change") else ""
    return f"{first}\nlast Dream: {_when(last['at'])}, {last['status']}{counts}, {last['entries']} entries{change}"
