"""Where memory lives: ``~/.catbuddy/projects/<slug>/memory/`` (never inside the user's repository),
plus the two MEMORY.md files Dream writes (the global one and the project's)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from catbuddy.workspace import Workspace

JOURNAL_NAME = "history.jsonl"
CURSOR_NAME = ".cursor"
STATE_NAME = "dream_state.json"
LOCK_NAME = "dream.lock"
WRITE_LOCK_NAME = ".memory-write.lock"  # beside the global MEMORY.md, which every project's Dream writes
VERSIONS_DIR = "versions"
VERSIONS_LOG = "log.jsonl"
GLOBAL, PROJECT = "global", "project"
FILE_KEYS = (GLOBAL, PROJECT)


@dataclass(frozen=True)
class MemoryPaths:
    root: Path  # the project's memory folder
    global_memory: Path  # ~/.catbuddy/workspace/MEMORY.md: "## User Profile"
    project_memory: Path  # <work root>/.catbuddy/MEMORY.md: "## Project Context"

    @classmethod
    def of(cls, workspace: Workspace) -> MemoryPaths:
        return cls(workspace.memory_dir, workspace.global_memory, workspace.project_memory)

    @property
    def journal(self) -> Path:
        return self.root / JOURNAL_NAME

    @property
    def cursor(self) -> Path:
        return self.root / CURSOR_NAME

    @property
    def state(self) -> Path:
        return self.root / STATE_NAME

    @property
    def lock(self) -> Path:
        return self.root / LOCK_NAME

    @property
    def write_lock(self) -> Path:
        return self.global_memory.parent / WRITE_LOCK_NAME

    @property
    def versions(self) -> Path:
        return self.root / VERSIONS_DIR

    @property
    def versions_log(self) -> Path:
        return self.versions / VERSIONS_LOG

    def memory_file(self, key: str) -> Path:
        return self.global_memory if key == GLOBAL else self.project_memory

    def key_of(self, path: Path) -> str | None:
        """``global`` or ``project`` when ``path`` (resolved) is one of the two MEMORY.md files."""
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        for key in FILE_KEYS:
            if resolved == self.memory_file(key).resolve():
                return key
        return None
