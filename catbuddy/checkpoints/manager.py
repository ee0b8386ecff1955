"""Checkpoints of the work tree per turn, and the undo, redo and rewind built on them.

Before the first call of a turn that may write (a file tool or a command), the work tree is captured in
the shadow repository (shadow.py); when the turn ends it is captured again, and a turn whose two
captures differ is journaled (journal.py). Undoing a turn puts back, as they were before it, exactly the
files it changed; a file the user changed since the turn ended is a conflict, listed and left alone
unless the caller insists. A checkpoint that cannot be taken never stops the turn: the caller is told
that this turn cannot be undone.

Everything here blocks: callers run it in a thread.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from catbuddy.checkpoints.journal import REDO, UNDO, Journal, TurnRecord, TurnState
from catbuddy.checkpoints.shadow import CheckpointError, ShadowRepo, Snapshot, git_available

log = logging.getLogger(__name__)

SHADOW_DIR = "checkpoints.git"
JOURNAL_FILE = "catbuddy-journal.jsonl"


@dataclass
class Restore:
    """What an undo, redo or rewind would do: the files it puts back and those the user changed since."""

    turns: list[TurnRecord]
    paths: list[str]
    conflicts: list[str] = field(default_factory=list)
    target: dict[str, str] = field(default_factory=dict)  # path -> the tree it is restored from


class Checkpoints:
    def __init__(
        self,
        project_dir: Path,
        work_root: Path,
        max_file_bytes: int,
        enabled: bool = True,
        home: Path | None = None,
    ) -> None:
        excluded = (home,) if home is not None else ()
        self.shadow = ShadowRepo(project_dir / SHADOW_DIR, work_root, max_file_bytes, excluded)
        self.journal = Journal(project_dir / SHADOW_DIR / JOURNAL_FILE)
        self.enabled = enabled and git_available()
        self.missing_git = enabled and not self.enabled
        self._skipped_told: set[str] = set()
        self._session = ""
        self._message_id = ""
        self._before: Snapshot | None = None
        self._failed = False
        # Files this turn's calls said they write; None until one says, or once a call could write
        # anything (a command): then the capture after the turn scans the whole tree.
        self._touched: set[str] | None = None
        self._noted = False
        # One git at a time on the shadow's index (warm_up runs in the background).
        self._lock = threading.Lock()
        self._warm_skipped: list[str] = []

    # --- turns --------------------------------------------------------------------------------------

    def begin_turn(self, session: str, message_id: str) -> None:
        self._session, self._message_id = session, message_id
        self._before, self._failed = None, False
        self._touched, self._noted = None, False

    def warm_up(self) -> None:
        """The first capture of a project hashes every file once (seconds on a large tree): the app does
        it in the background at start, so the first turn that writes does not wait for it."""
        if not self.enabled:
            return
        with self._lock:
            try:
                self._warm_skipped = self.shadow.snapshot().skipped
            except (CheckpointError, OSError) as exc:
                log.info("checkpoint warm-up failed: %s", exc)

    def before_write(self) -> list[str]:
        """Capture the work tree once per turn, before its first write; returns what to tell the user."""
        if not self.enabled or self._before is not None or self._failed:
            return []
        with self._lock:
            try:
                self._before = self.shadow.snapshot()
            except (CheckpointError, OSError) as exc:
                self._failed = True
                log.warning("checkpoint failed: %s", exc)
                return [f"No checkpoint could be taken ({exc}); this turn cannot be undone."]
            skipped, self._warm_skipped = [*self._warm_skipped, *self._before.skipped], []
        return self._skipped_notice(skipped)

    def note_writes(self, paths: list[Path] | None) -> None:
        """A call of this turn writes ``paths`` (None: it could write anything, like a command): the
        capture after the turn then hashes just those files instead of scanning the tree."""
        if not self._noted:
            self._noted, self._touched = True, set()
        if self._touched is None:
            return
        if paths is None:
            self._touched = None
            return
        root = self.shadow.work_root
        for path in paths:
            if path.is_relative_to(root) and path != root:
                self._touched.add(str(path.relative_to(root)))

    def end_turn(self) -> TurnRecord | None:
        """Capture the work tree after the turn; journal the turn when it changed files."""
        before, self._before = self._before, None
        if before is None:
            return None
        touched, self._touched, self._noted = self._touched, None, False
        try:
            with self._lock:
                after = self.shadow.snapshot(sorted(touched) if touched is not None else None)
            if after.tree == before.tree:
                return None
            return self.journal.add_turn(self._session, self._message_id, before.tree, after.tree)
        except (CheckpointError, OSError) as exc:
            log.warning("checkpoint after the turn failed: %s", exc)
            return None

    def _skipped_notice(self, skipped: list[str]) -> list[str]:
        new = [p for p in skipped if p not in self._skipped_told]
        self._skipped_told.update(new)
        if not new:
            return []
        mb = self.shadow.max_file_bytes / 1_000_000
        shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
        return [f"Checkpoints leave out files over {mb:g} MB ({shown}): undo cannot bring them back."]

    # --- undo, redo, rewind -------------------------------------------------------------------------

    def turns(self, session: str | None = None) -> list[TurnState]:
        return [t for t in self.journal.turns() if session is None or t.record.session == session]

    def plan_undo(self, session: str | None = None) -> Restore | None:
        """The latest turn (of ``session``, or any) still applied; None: nothing to undo."""
        live = [t for t in self.turns(session) if not t.undone]
        if not live:
            return None
        return self._plan([live[-1].record], undo=True)

    def plan_redo(self, session: str | None = None) -> Restore | None:
        """The turn undone last, when no turn has changed files since; None: nothing to redo."""
        states = self.turns(session)
        undone = [t for t in states if t.undone]
        if not undone:
            return None
        latest = max(undone, key=lambda t: t.changed_at)
        if any(not t.undone and _number(t.record.id) > _number(latest.record.id) for t in states):
            return None  # a later turn built on the undone state: redoing would overwrite it
        return self._plan([latest.record], undo=False)

    def plan_rewind(self, session: str, message_id: str) -> Restore:
        """Every applied turn of ``session`` from the one ``message_id`` started, newest first."""
        turns = [
            t.record
            for t in self.turns(session)
            if not t.undone and _number(t.record.message_id) >= _number(message_id)
        ]
        return self._plan(list(reversed(turns)), undo=True)

    def _plan(self, turns: list[TurnRecord], *, undo: bool) -> Restore:
        restore = Restore(turns, [])
        expected: dict[str, str] = {}  # path -> the tree the work tree should match now
        for record in turns:
            now, then = (record.after, record.before) if undo else (record.before, record.after)
            for path in self.shadow.changed_between(record.before, record.after):
                expected.setdefault(path, now)  # the newest turn says what the file is now
                restore.target[path] = then  # the oldest turn says what it goes back to
        restore.paths = sorted(expected)
        for tree in set(expected.values()):
            paths = [p for p, t in expected.items() if t == tree]
            entries = self.shadow.entries(tree, paths)
            for path in paths:
                entry = entries.get(path)
                if self.shadow.current_id(path) != (entry.blob if entry else None):
                    restore.conflicts.append(path)
        restore.conflicts.sort()
        return restore

    def apply(self, restore: Restore, *, undo: bool, overwrite_conflicts: bool = False) -> list[str]:
        """Put the files back; conflicts are skipped unless ``overwrite_conflicts``. Returns the paths
        written or deleted, and journals each turn as undone (or redone)."""
        paths = [p for p in restore.paths if overwrite_conflicts or p not in restore.conflicts]
        for tree in set(restore.target[p] for p in paths):
            self.shadow.restore(tree, [p for p in paths if restore.target[p] == tree])
        for record in restore.turns:
            self.journal.mark(UNDO if undo else REDO, record.id)
        return paths


def _number(ident: str) -> int:
    digits = "".join(c for c in ident if c.isdigit())
    return int(digits) if digits else 0
