"""Saving from the app's editor (/memory, /edit): a MEMORY.md goes through the versions, other files as is."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.versions import MemoryVersions

log = logging.getLogger(__name__)

EDITOR_SOURCE = "editor"
EXTERNAL_SOURCE = "editor ($EDITOR)"


class VersionedSaver:
    def __init__(self, paths: MemoryPaths, session_id: Callable[[], str] = lambda: "") -> None:
        self.paths = paths
        self.versions = MemoryVersions(paths)
        self.session_id = session_id

    def _sessions(self) -> tuple[str, ...]:
        session = self.session_id()
        return (session,) if session else ()

    def save(self, path: Path, text: str) -> None:
        key = self.paths.key_of(path)
        if key is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        self.versions.write({key: text}, source=EDITOR_SOURCE, sessions=self._sessions())

    def watch(self, path: Path) -> Callable[[], None]:
        """Before an outside editor writes ``path``: keep its version; call the result afterwards."""
        pending = self.versions.begin(path, source=EXTERNAL_SOURCE, sessions=self._sessions())

        def done() -> None:
            if pending is not None:
                try:
                    pending.finish()
                except OSError as exc:  # the edit itself is saved; only its log line is missing
                    log.warning("cannot log the memory edit: %s", exc)

        return done
