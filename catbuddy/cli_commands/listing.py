"""`catbuddy sessions` and `catbuddy compact`: sessions seen from the shell."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, Literal

from catbuddy.config import Settings
from catbuddy.session.store import SessionInfo
from catbuddy.workspace import Workspace

FIRST_MESSAGE_WIDTH = 60
Outcome = Literal["done", "nothing", "failed"]  # of `catbuddy compact` (and --undo): exit 0, 0, 1


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "?"


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size:.1f} GB"


def session_json(info: SessionInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "path": str(info.path),
        "created_at": info.created_at.isoformat() if info.created_at else None,
        "last_activity": info.last_activity.isoformat(),
        "message_count": info.message_count,
        "first_user_message": info.first_user_message,
        "size_bytes": info.size_bytes,
        "model": info.model,
        "problems": list(info.problems),
    }


def format_sessions(infos: list[SessionInfo], workspace: Workspace) -> str:
    if not infos:
        return (
            f"No sessions yet for {workspace.work_root}. Start one with `catbuddy` or `catbuddy run PROMPT`."
        )
    header = f"{'id':<24} {'started':<17} {'last activity':<17} {'msgs':>5} {'size':>7}  first message"
    lines = [header, "-" * len(header)]
    for info in infos:
        first = " ".join(info.first_user_message.split())
        if len(first) > FIRST_MESSAGE_WIDTH:
            first = first[: FIRST_MESSAGE_WIDTH - 1] + "…"
        lines.append(
            f"{info.id:<24} {_when(info.created_at):<17} {_when(info.last_activity):<17} "
            f"{info.message_count:>5} {_size(info.size_bytes):>7}  {first}"
        )
    lines.append("")
    for info in infos:
        lines += [f"note: session {info.id}: {problem}" for problem in info.problems]
    lines.append("Resume one with: catbuddy --resume <id>   (or the latest: catbuddy --continue)")
    return "\n".join(lines)


def compact_session(
    workspace: Workspace, settings: Settings, session_id: str | None, instructions: str | None
) -> tuple[Outcome, str]:
    """Open the session (taking its lock), compact it once, and close it. ``nothing`` when there was
    nothing to fold (no session, or a history already short): not a failure."""
    from catbuddy.agent.compaction import NOTHING_TO_COMPACT
    from catbuddy.agent.loop import AgentLoop

    async def go() -> tuple[Outcome, str]:
        loop = AgentLoop(
            workspace, settings, channel="headless", resume=session_id, continue_latest=session_id is None
        )
        try:
            if session_id is None and loop.store.latest(workspace.work_root) is None:
                return "nothing", f"No session to compact in {workspace.work_root}: nothing to do."
            await loop.start()
            result = await loop.compact(instructions)
        finally:
            await loop.aclose()
        text = f"session {loop.session_id}: {result.message}"
        if result.ok:
            return "done", text
        return ("nothing" if result.message == NOTHING_TO_COMPACT else "failed"), text

    return asyncio.run(go())
