"""`catbuddy undo` / `redo` / `rewind` and `catbuddy sessions fork`: taking back what turns did.

Files come back from the turn checkpoints (catbuddy/checkpoints); the conversation is rewound by a
record (the session file only grows) and forked into a new session file. Each action is recorded in
the session it concerns, as an event record the ledger and `sessions show` can read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from catbuddy.checkpoints.manager import Checkpoints, Restore
from catbuddy.checkpoints.shadow import CheckpointError
from catbuddy.config import Settings
from catbuddy.errors import CatbuddyError
from catbuddy.session.fork import FORKED_KIND, fork_session
from catbuddy.session.history import REWIND_KIND, without_rewound
from catbuddy.session.records import MessageRecord
from catbuddy.session.store import SESSION_SUFFIX, SessionLocked, SessionStore
from catbuddy.workspace import Workspace

RESTORED_KIND = "files_restored"  # the event record FilesRestored writes (agent/events.py)


class UndoError(CatbuddyError):
    """An undo, redo or rewind that cannot be done as asked (conflicts, an unknown message)."""


@dataclass
class Outcome:
    text: str
    exit_code: int = 0
    paths: list[str] = field(default_factory=list)


def checkpoints_for(workspace: Workspace, settings: Settings) -> Checkpoints:
    return Checkpoints(
        workspace.sessions_dir.parent,
        workspace.work_root,
        settings.tools.checkpoint_max_file_mb * 1_000_000,
        enabled=settings.tools.checkpoints,
        home=workspace.home,
    )


def describe_restore(restore: Restore, verb: str) -> str:
    lines = [f"{verb} {len(restore.paths)} file{'s' if len(restore.paths) != 1 else ''}:"]
    lines += [
        f"  {path}{'  (changed since: conflict)' if path in restore.conflicts else ''}"
        for path in restore.paths
    ]
    return "\n".join(lines)


def conflict_error(restore: Restore, action: str) -> UndoError:
    names = ", ".join(restore.conflicts)
    return UndoError(
        f"{action} refused: these files changed after the turn and would be overwritten: {names}",
        "Check them, then run it again with --force to overwrite them, or leave them as they are.",
    )


def undo_or_redo(
    workspace: Workspace, settings: Settings, session_id: str | None, *, redo: bool, force: bool
) -> Outcome:
    """The latest turn's file changes taken back (or put back again). Conflicts refuse unless ``force``;
    nothing to undo is not an error."""
    checkpoints = checkpoints_for(workspace, settings)
    action = "redo" if redo else "undo"
    if not checkpoints.enabled:
        return Outcome(f"Checkpoints are off ({_why_off(settings)}); there is nothing to {action}.")
    try:
        restore = checkpoints.plan_redo(session_id) if redo else checkpoints.plan_undo(session_id)
    except CheckpointError as exc:
        raise UndoError(f"cannot read the checkpoints: {exc}") from None
    if restore is None:
        where = f" in session {session_id}" if session_id else ""
        return Outcome(f"Nothing to {action}{where}: no turn {'was undone' if redo else 'changed files'}.")
    if restore.conflicts and not force:
        raise conflict_error(restore, action.capitalize())
    try:
        paths = checkpoints.apply(restore, undo=not redo, overwrite_conflicts=force)
    except CheckpointError as exc:
        raise UndoError(f"{action} failed part-way: {exc}") from None
    record_restored(workspace, restore, action, paths)
    turn = restore.turns[0]
    verb = "Put back" if redo else "Undid"
    return Outcome(
        f"{verb} turn {turn.id} of session {turn.session} (message {turn.message_id}).\n"
        + describe_restore(restore, "Restored"),
        paths=paths,
    )


def record_restored(workspace: Workspace, restore: Restore, action: str, paths: list[str]) -> None:
    """Note the action in each session it touched (skipped quietly when that session is open elsewhere:
    the app that holds it records nothing it did not do)."""
    for session_id in sorted({t.session for t in restore.turns}):
        _append_event(
            workspace,
            session_id,
            RESTORED_KIND,
            action=action,
            turns=[t.id for t in restore.turns if t.session == session_id],
            paths=paths,
            conflicts_kept=[p for p in restore.conflicts if p not in paths],
        )


def _append_event(workspace: Workspace, session_id: str, kind: str, **data: object) -> bool:
    store = SessionStore(workspace.sessions_dir)
    try:
        session = store.open(session_id)
    except SessionLocked:
        return False
    try:
        session.append_event(kind, **data)
    finally:
        session.close()
    return True


def _why_off(settings: Settings) -> str:
    return "tools.checkpoints = false" if not settings.tools.checkpoints else "git was not found"


# --- rewind ---------------------------------------------------------------------------------------


def user_messages(workspace: Workspace, session_id: str) -> list[MessageRecord]:
    """The session's user messages that still count, oldest first (what /rewind offers)."""
    from catbuddy.session.records import read_session_file

    store = SessionStore(workspace.sessions_dir)
    loaded = read_session_file(store.find(session_id))
    return [
        r
        for r in without_rewound(loaded.records)
        if isinstance(r, MessageRecord) and r.message.get("role") == "user"
    ]


def rewind(
    workspace: Workspace,
    settings: Settings,
    session_id: str,
    message_id: str,
    *,
    files: bool = True,
    conversation: bool = True,
    force: bool = False,
) -> Outcome:
    """Back to just before ``message_id`` (a user message): the files the turns from it changed, the
    conversation from it on, or both."""
    store = SessionStore(workspace.sessions_dir)
    session_id = store.find(session_id).name.removesuffix(SESSION_SUFFIX)
    if message_id not in {m.id for m in user_messages(workspace, session_id)}:
        raise UndoError(
            f"{message_id} is not a user message of session {session_id} (or was rewound already).",
            "The ids are in `catbuddy sessions show ID --json`; they look like m000003.",
        )
    lines = []
    paths: list[str] = []
    if files:
        checkpoints = checkpoints_for(workspace, settings)
        if checkpoints.enabled:
            restore = checkpoints.plan_rewind(session_id, message_id)
            if restore.conflicts and not force:
                raise conflict_error(restore, "Rewind")
            paths = checkpoints.apply(restore, undo=True, overwrite_conflicts=force)
            if restore.turns:
                record_restored(workspace, restore, "rewind", paths)
            lines.append(describe_restore(restore, "Restored"))
        else:
            lines.append(f"Files not rewound: checkpoints are off ({_why_off(settings)}).")
    if conversation:
        if not _append_event(workspace, session_id, REWIND_KIND, to=message_id):
            raise UndoError(
                f"session {session_id} is open in another catbuddy; its conversation cannot be rewound from here.",
                "Use /rewind in that app, or close it first.",
            )
        lines.append(f"The conversation of {session_id} now ends just before {message_id}.")
    return Outcome("\n".join(lines), paths=paths)


# --- fork -----------------------------------------------------------------------------------------


def fork(workspace: Workspace, session_id: str, at: str | None = None) -> str:
    """A new session carrying ``session_id``'s history (before message ``at``, if given); its id."""
    store = SessionStore(workspace.sessions_dir)
    path = store.find(session_id)
    new_id = fork_session(store, path, workspace.work_root, at)
    _append_event(
        workspace,
        path.name.removesuffix(SESSION_SUFFIX),
        FORKED_KIND,
        role="source",
        fork=new_id,
        at=at or "",
    )
    return new_id
