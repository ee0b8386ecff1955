"""catbuddy's own files, which the model may not change behind the user's back.

- **session files** (everything under ``<home>/projects/``: sessions, memory entries and versions) are
  never written by a tool, in any mode;
- **catbuddy's configuration and state**: the project's and the global ``config.toml``, and everything else
  under the catbuddy home (calibration, trust decisions, logs, global skills) except the memory files the
  `memory` and `my` skills edit (``<home>/workspace/{MEMORY,USER,SOUL,TOOLS,AGENTS}.md``), may be written only
  with the user's approval of that one call: the approval policy asks (never remembered, never automatic),
  and a yes puts a one-use ``WriteGrants`` entry for that exact path in the tool context, which the file
  tool consumes. Without it the tool refuses. The exec sandbox mounts all of these read-only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from catbuddy.workspace import PROJECT_CONFIG, catbuddy_homes, resolved_or_absolute

SESSION_DIR_NAME = "projects"  # under the catbuddy home: sessions, memory entries, memory versions
MEMORY_FILES = frozenset({"MEMORY.md", "USER.md", "SOUL.md", "TOOLS.md", "AGENTS.md"})
SESSION, CONFIG, HOME = "session", "config", "home"


@dataclass(frozen=True)
class ProtectedPlaces:
    homes: tuple[Path, ...]
    project_configs: tuple[Path, ...]

    @classmethod
    def of(cls, home: Path | None, work_root: Path | None) -> ProtectedPlaces:
        root = work_root or Path.cwd()
        configs = {
            Path(os.path.normpath(root.absolute() / PROJECT_CONFIG)),
            resolved_or_absolute(root) / PROJECT_CONFIG,
        }
        return cls(tuple(catbuddy_homes(home)), tuple(sorted(configs)))

    @property
    def session_dirs(self) -> list[Path]:
        return [home / SESSION_DIR_NAME for home in self.homes]

    def classify(self, path: Path) -> str | None:
        """SESSION, CONFIG or HOME for one of catbuddy's own files; None for anything else."""
        for candidate in _spellings(path):
            if candidate in self.project_configs:
                return CONFIG
            for home in self.homes:
                if candidate == home / SESSION_DIR_NAME or candidate.is_relative_to(home / SESSION_DIR_NAME):
                    return SESSION
                if candidate == home / "config.toml":
                    return CONFIG
                if candidate.parent == home / "workspace" and candidate.name in MEMORY_FILES:
                    continue
                if candidate == home or candidate.is_relative_to(home):
                    return HOME
        return None

    def holds_sessions(self, path: Path) -> bool:
        """Whether deleting or moving ``path`` takes session files with it (it is one, or an ancestor)."""
        for candidate in _spellings(path):
            for sessions in self.session_dirs:
                if candidate == sessions or candidate.is_relative_to(sessions):
                    return True
                if sessions.is_relative_to(candidate) and candidate != Path("/"):
                    return True
        return False

    def holds_protected(self, path: Path) -> bool:
        """Whether deleting or moving ``path`` takes catbuddy's configuration or state with it."""
        if self.classify(path) in (CONFIG, HOME):
            return True
        return any(
            config.is_relative_to(candidate) or home.is_relative_to(candidate)
            for candidate in _spellings(path)
            if candidate != Path("/")
            for config in self.project_configs
            for home in self.homes
        )


def _spellings(path: Path) -> list[Path]:
    """The path as written (normalised) and with symlinks resolved: either may be how it is reached."""
    plain = Path(os.path.normpath(path))
    resolved = resolved_or_absolute(plain)
    return [plain] if resolved == plain else [plain, resolved]


def describe(kind: str, path: Path) -> str:
    if kind == SESSION:
        return "one of catbuddy's session files"
    if kind == CONFIG:
        return f"catbuddy's own configuration ({path})"
    return f"catbuddy's own state under its home ({path})"


class WriteGrants:
    """One-use permissions to write one of catbuddy's own files, each given by the user for one call."""

    def __init__(self) -> None:
        self._paths: set[Path] = set()

    def allow(self, path: Path) -> None:
        self._paths.add(Path(path))

    def consume(self, path: Path) -> bool:
        """True, once, when ``path`` was granted; the grant is used up."""
        if path in self._paths:
            self._paths.discard(path)
            return True
        return False

    def __len__(self) -> int:
        return len(self._paths)
