"""`catbuddy dream` and `catbuddy memory log|diff|undo`: memory seen from the shell."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

from catbuddy.config import Settings
from catbuddy.memory.dream import DreamResult, DreamStatus, entries_text
from catbuddy.memory.log_view import format_diff, format_log, log_json, undo_last
from catbuddy.memory.versions import VersionError
from catbuddy.workspace import Workspace

EXIT_OK, EXIT_FAILED = 0, 1
FAILED_STATUSES = (DreamStatus.FAILED, DreamStatus.BUSY)


# --- dream -----------------------------------------------------------------------------------------


def run_dream(
    workspace: Workspace,
    settings: Settings,
    *,
    dry_run: bool,
    assume_yes: bool,
    confirm: Callable[[str], bool],
) -> tuple[int, DreamResult, list[str]]:
    """One Dream run by hand: (exit code, result, lines to print). ``confirm`` asks in ``ask`` mode."""
    from catbuddy.llm.lazy import LazyProvider
    from catbuddy.memory.factory import make_dreamer

    async def go() -> tuple[DreamResult, list[str]]:
        provider = LazyProvider(settings)
        lines: list[str] = []
        try:
            dreamer = await asyncio.to_thread(
                make_dreamer, workspace, settings, provider, secrets=(settings.api_key or "",)
            )
            if not dry_run:
                dreamer.unpause()
            outcome = await dreamer.propose()
            if isinstance(outcome, DreamResult):
                result = outcome
            else:
                waiting = outcome.material.waiting
                sessions = ", ".join(outcome.sessions) or "no session"
                lines.append(
                    f"Reading {entries_text(len(outcome.material.entries))} (sessions: {sessions}) with "
                    f"{dreamer.config.model}"
                    + (f"; {waiting} more wait for the next run." if waiting else ".")
                )
                if outcome.diff():
                    lines.append(outcome.diff().rstrip("\n"))
                if dry_run:
                    return dreamer.dry_run(outcome), lines
                asking = settings.memory.dream == "ask" and outcome.changed and not assume_yes
                if asking and not confirm(f"Apply memory {outcome.counts}?"):
                    result = dreamer.discard(outcome, declined=False)
                    result.message = (
                        'Not applied (memory.dream = "ask"); nothing changed. Use --yes to apply.'
                    )
                else:
                    result = dreamer.apply(outcome)
            if not dry_run:
                dreamer.record(result)
            return result, lines
        finally:
            await provider.aclose()

    result, lines = asyncio.run(go())
    for problem in result.problems:
        lines.insert(0, f"warning: {problem}")
    lines.append(result.message)
    if result.status is DreamStatus.APPLIED:
        lines.append("Review: catbuddy memory diff · roll back: catbuddy memory undo")
    return (EXIT_FAILED if result.status in FAILED_STATUSES else EXIT_OK), result, lines


def ask_on_terminal(question: str) -> bool:
    if sys.stdin is None or not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def dream_json(result: DreamResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "ok": result.ok,
        "message": result.message,
        "added": result.added,
        "removed": result.removed,
        "updated": result.updated,
        "entries": result.entries,
        "change": result.change,
        "diff": result.diff,
        "problems": result.problems,
    }


__all__ = [
    "VersionError",
    "ask_on_terminal",
    "dream_json",
    "format_diff",
    "format_log",
    "log_json",
    "run_dream",
    "undo_last",
]
