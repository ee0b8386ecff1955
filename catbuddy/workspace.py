"""Places on disk (docs/architecture.md §11) and creating the workspaces from ``workspace_defaults/``."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from catbuddy.markdown_comments import strip_html_comments
from catbuddy.resources import workspace_defaults_dir

HOME_ENV = "CATBUDDY_HOME"
BOOTSTRAP_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md")
WORKSPACE_FILES = (*BOOTSTRAP_FILES, "MEMORY.md")
GLOBAL_WORKSPACE_FILES = ("USER.md", "MEMORY.md")
PROJECT_DIR_NAME = ".catbuddy"
PROJECT_CONFIG = Path(PROJECT_DIR_NAME) / "config.toml"


def default_home(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    if env.get(HOME_ENV):
        return Path(env[HOME_ENV]).expanduser().resolve()
    return Path.home() / ".catbuddy"


def project_slug(work_root: Path) -> str:
    """A readable, collision-free folder name for a work root."""
    text = str(work_root.resolve())
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[-60:] or "root"
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


def catbuddy_homes(home: Path | None) -> list[Path]:
    """The configured home, $CATBUDDY_HOME's and ~/.catbuddy: all of them are catbuddy's (the safety rules
    protect them, safety/protected.py; the exec sandbox mounts them read-only, sandbox/launch.py)."""
    homes = [Path.home() / ".catbuddy", default_home()] + ([home] if home is not None else [])
    seen: list[Path] = []
    for item in homes:
        for path in (
            Path(os.path.normpath(item.expanduser().absolute())),
            resolved_or_absolute(item.expanduser()),
        ):
            if path not in seen:
                seen.append(path)
    return seen


def resolved_or_absolute(path: Path) -> Path:
    """``path`` with symlinks resolved, or normalised and absolute when it cannot be resolved."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # a loop, a NUL byte
        return Path(os.path.normpath(path.absolute()))


@dataclass(frozen=True)
class Workspace:
    work_root: Path
    home: Path

    @classmethod
    def at(cls, work_root: Path | str | None = None, home: Path | str | None = None) -> Workspace:
        root = Path(work_root or os.getcwd()).expanduser().resolve()
        return cls(work_root=root, home=Path(home).expanduser().resolve() if home else default_home())

    @property
    def project_dir(self) -> Path:
        return self.work_root / PROJECT_DIR_NAME

    @property
    def global_workspace(self) -> Path:
        return self.home / "workspace"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "projects" / project_slug(self.work_root) / "sessions"

    @property
    def memory_dir(self) -> Path:
        """Memory entries, the Dream cursor and memory versions: beside the sessions, never in the repo."""
        return self.home / "projects" / project_slug(self.work_root) / "memory"

    @property
    def project_skills_dir(self) -> Path:
        return self.project_dir / "skills"

    @property
    def global_skills_dir(self) -> Path:
        return self.global_workspace / "skills"

    @property
    def agents_skills_dir(self) -> Path:
        return self.work_root / ".agents" / "skills"

    def own_path(self, name: str, global_user_profile: bool = False) -> Path:
        """Where catbuddy keeps its copy of a workspace file (existing or not): `.catbuddy/NAME`, or the
        global USER.md with ``global_user_profile``. Writing one creates it there."""
        if name == "USER.md" and global_user_profile:
            return self.global_workspace / "USER.md"
        if name == "MEMORY.md":
            return self.project_memory
        return self.project_dir / name

    def bootstrap_path(self, name: str, global_user_profile: bool = False) -> Path:
        """Where a bootstrap file is read from: catbuddy's own copy once it exists, until then the shipped
        default in place (nothing is created in the repository before someone edits a file). AGENTS.md
        at the work root wins over `.catbuddy/AGENTS.md` (the whole hierarchy: instructions.py)."""
        if name == "AGENTS.md":
            at_root = self.work_root / "AGENTS.md"
            if at_root.is_file():
                return at_root
        own = self.own_path(name, global_user_profile)
        if own.exists():
            return own
        default = workspace_defaults_dir() / name
        return default if default.is_file() else own

    def shipped_default_for(self, path: Path) -> str | None:
        """The shipped text that stands in for ``path`` while it does not exist: a project workspace file
        (`.catbuddy/SOUL.md`, …, `.catbuddy/MEMORY.md`) or a global one. None for any other path, or
        once the file exists."""
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):
            return None
        if resolved.exists():
            return None
        if resolved.parent == self.project_dir.resolve() and resolved.name in WORKSPACE_FILES:
            return shipped_default(resolved.name)
        if resolved.parent == self.global_workspace.resolve() and resolved.name in GLOBAL_WORKSPACE_FILES:
            return shipped_default(resolved.name)
        return None

    @property
    def project_memory(self) -> Path:
        return self.project_dir / "MEMORY.md"

    @property
    def global_memory(self) -> Path:
        return self.global_workspace / "MEMORY.md"

    def editable_path(self, name: str, global_user_profile: bool = False) -> Path:
        """The file `/edit NAME` opens and saves: the one the prompt reads; for a file still shipped as a
        default, catbuddy's own copy, which saving creates. AGENTS.md: the nearest instructions file the
        prompt reads (from the work root up to the git root: AGENTS.md, or CLAUDE.md where a folder has
        no AGENTS.md), else our own."""
        if name == "AGENTS.md":
            from catbuddy.instructions import nearest_instructions

            nearest = nearest_instructions(self.work_root)
            if nearest is not None:
                return nearest
        return self.own_path(name, global_user_profile)

    def ensure_home(self) -> list[Path]:
        """Create the global home on first use; existing files are never touched."""
        created: list[Path] = []
        defaults = workspace_defaults_dir()
        for folder in (self.home, self.global_workspace, self.global_skills_dir, self.home / "projects"):
            if not folder.exists():
                folder.mkdir(parents=True, exist_ok=True)
                created.append(folder)
        for name in GLOBAL_WORKSPACE_FILES:
            created += _copy_if_missing(defaults / name, self.global_workspace / name)
        return created

    def init_project(self) -> list[Path]:
        """`catbuddy init`: the project workspace from the shipped defaults, never overwriting."""
        created: list[Path] = []
        defaults = workspace_defaults_dir()
        if not self.project_dir.exists():
            self.project_dir.mkdir(parents=True)
            created.append(self.project_dir)
        for name in WORKSPACE_FILES:
            if name == "AGENTS.md" and (self.work_root / "AGENTS.md").is_file():
                continue  # the project already follows the AGENTS.md convention at its root
            created += _copy_if_missing(defaults / name, self.project_dir / name)
        if not self.project_skills_dir.exists():
            self.project_skills_dir.mkdir()
            created.append(self.project_skills_dir)
        return created


def _copy_if_missing(source: Path, target: Path) -> list[Path]:
    if target.exists() or not source.is_file():
        return []
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return [target]


def shipped_default(name: str) -> str:
    path = workspace_defaults_dir() / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def is_default_memory(text: str) -> bool:
    """True when a MEMORY.md holds nothing beyond the shipped template (its comments aside)."""
    return strip_html_comments(text).strip() == strip_html_comments(shipped_default("MEMORY.md")).strip()
