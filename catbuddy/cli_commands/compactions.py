"""`catbuddy compact --undo` and `catbuddy sessions show`: a session's compactions (and its tool calls,
``cli_commands/tool_outcomes.py``) from the shell.

Neither needs a model: undoing appends a ``compaction_undo`` record (the raw messages never left the
file, docs/architecture.md §6) and showing reads the records.
"""

from __future__ import annotations

from typing import Any

from catbuddy.agent.compaction import describe_undo
from catbuddy.agent.plan_report import format_delegation, plan_and_delegation
from catbuddy.cli_commands.listing import Outcome
from catbuddy.cli_commands.tool_outcomes import format_tool_calls, tool_calls
from catbuddy.session.history import active_compactions, rebuild_history
from catbuddy.session.records import CompactionRecord, CompactionUndoRecord, read_session_file
from catbuddy.session.store import SessionStore
from catbuddy.workspace import Workspace

RULE = "=" * 80


def undo_compaction(workspace: Workspace, session_id: str | None) -> tuple[Outcome, str]:
    """Void the compaction in force of a session (the latest of this directory by default). Takes the
    session's lock, so it refuses a session open in another catbuddy (SessionError)."""
    store = SessionStore(workspace.sessions_dir)
    if session_id is None:
        latest = store.latest(workspace.work_root)
        if latest is None:
            return "nothing", f"No session in {workspace.work_root}: nothing to undo."
        session_id = latest.id
    with store.open(session_id) as session:
        history = rebuild_history(session.load().records)
        voided = history.summary_id
        if voided is None:
            return "nothing", f"session {session.id}: nothing to undo, no compaction is in force."
        session.append_compaction_undo(voided)
        after = rebuild_history(session.load().records)
        return "done", f"session {session.id}: {describe_undo(voided, after)}"


def show_session(workspace: Workspace, session_id: str) -> dict[str, Any]:
    """A session's compactions, oldest first, each with its summary and ledger, and whether an undo
    voided it; plus what the working history is made of now."""
    store = SessionStore(workspace.sessions_dir)
    path = store.find(session_id)
    loaded = read_session_file(path)
    history = rebuild_history(loaded.records)
    in_force = {c.id for c in active_compactions(loaded.records)}
    undone: dict[str, str | None] = {
        r.voids: r.ts for r in loaded.records if isinstance(r, CompactionUndoRecord)
    }
    compactions = []
    for record in loaded.records:
        if isinstance(record, CompactionRecord):
            extra = record.extra
            compactions.append(
                {
                    "id": record.id,
                    "ts": record.ts,
                    "folded_through": record.folded_through,
                    "in_force": record.id in in_force,
                    "undone_at": undone.get(record.id) if record.id not in in_force else None,
                    "reason": extra.get("reason", ""),
                    "instructions": extra.get("instructions", ""),
                    "mode": extra.get("mode", ""),
                    "folded_messages": extra.get("folded_messages"),
                    "summary_tokens": extra.get("summary_tokens"),
                    "summary": record.summary,
                    "prose": extra.get("prose"),
                    "ledger": extra.get("ledger"),
                    "user_messages": extra.get("user_messages"),
                }
            )
    meta = loaded.meta
    return {
        "id": path.stem,
        "path": str(path),
        "model": meta.model if meta else "",
        "work_root": meta.work_root if meta else "",
        "messages": len(loaded.messages),
        "working_history": {
            "summary_id": history.summary_id,
            "folded_messages": history.folded,
            "messages": len(history.entries),
        },
        "compactions": compactions,
        "tool_calls": tool_calls(loaded.records),
        **plan_and_delegation(loaded.records, transcripts=True),
        "problems": list(loaded.problems) + list(history.problems),
    }


def format_show(data: dict[str, Any]) -> str:
    working = data["working_history"]
    lines = [
        f"session {data['id']} ({data['model'] or 'model unknown'}): {data['messages']:,} messages, "
        f"{len(data['compactions'])} compaction{'s' if len(data['compactions']) != 1 else ''}",
        f"file: {data['path']}",
    ]
    if working["summary_id"]:
        lines.append(
            f"working history: the summary of {working['summary_id']} + {working['messages']:,} messages "
            f"({working['folded_messages']:,} folded, searchable with recall)"
        )
    else:
        lines.append(f"working history: all {working['messages']:,} messages (no compaction in force)")
    for problem in data["problems"]:
        lines.append(f"! {problem}")
    lines += format_tool_calls(data["tool_calls"])
    lines += format_delegation(data, transcripts=True)
    if not data["compactions"]:
        lines += ["", "No compactions yet."]
    for c in data["compactions"]:
        state = "in force" if c["in_force"] else f"undone {c['undone_at'] or ''}".rstrip()
        how = f", {c['mode'].replace('_', ' ')}" if c["mode"] else ""
        folded = (
            f"{c['folded_messages']} messages through " if c["folded_messages"] is not None else "through "
        )
        lines += [
            "",
            RULE,
            f"compaction {c['id']} · {c['ts'] or '?'} · folds {folded}{c['folded_through']}{how} · {state}",
            f"reason: {c['reason'] or '-'}"
            + (f"; instructions: {c['instructions']}" if c["instructions"] else ""),
            RULE,
            c["summary"],
        ]
    return "\n".join(lines)
