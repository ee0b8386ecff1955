"""Find skills on disk and build the catalog the prompt and the `skill` tool use (docs/architecture.md §2, layer 4).

Skills live in four roots, scanned in increasing precedence: the shipped set, the global workspace
(``~/.catbuddy/workspace/skills``), ``<work root>/.agents/skills`` and ``<work root>/.catbuddy/skills``.
On a name clash the later root wins and the catalog records what it hid. Discovery reads each
SKILL.md exactly once; a broken one is skipped with a warning and kept as a ``SkillProblem``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.resources import workspace_defaults_dir
from catbuddy.skills.frontmatter import FrontmatterError, parse_skill_text
from catbuddy.workspace import Workspace

logger = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_BUNDLED_FILES = 100  # listed per skill; enough for any sane skill, bounded for a runaway folder
MAX_BUNDLED_SCAN = 2_000  # files visited before giving up, so a vendored tree cannot stall a tool call
SKIPPED_DIR_NAMES = frozenset({"__pycache__", "node_modules", ".git"})
TABLE_DESCRIPTION_WIDTH = 72

SOURCE_SHIPPED = "shipped"
SOURCE_GLOBAL = "global"
SOURCE_AGENTS = "agents"
SOURCE_PROJECT = "project"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: Path  # the SKILL.md
    directory: Path
    always: bool
    source: str  # "shipped" | "global" | "project" | "agents"
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)
    allowed_tools: list[str] = field(default_factory=list, hash=False)

    def bundled_files(self, limit: int = MAX_BUNDLED_FILES) -> list[str]:
        """Sorted POSIX paths (relative to the skill folder) of every file besides SKILL.md, at most ``limit``."""
        return sorted(_walk_files(self.directory, MAX_BUNDLED_SCAN))[:limit]


@dataclass
class SkillProblem:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class ShadowedSkill:
    """A skill hidden by a same-named one from a root with higher precedence."""

    hidden: Skill
    winner: Skill


@dataclass
class SkillCatalog:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[SkillProblem] = field(default_factory=list)
    shadowed: list[ShadowedSkill] = field(default_factory=list)

    def all(self) -> list[Skill]:
        return [self.skills[name] for name in sorted(self.skills)]

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def names(self) -> list[str]:
        return sorted(self.skills)

    def always_on(self) -> list[Skill]:
        return [skill for skill in self.all() if skill.always]

    def on_demand(self) -> list[Skill]:
        return [skill for skill in self.all() if not skill.always]

    def __len__(self) -> int:
        return len(self.skills)

    def __contains__(self, name: object) -> bool:
        return name in self.skills


def skill_roots(workspace: Workspace) -> list[tuple[str, Path]]:
    """(source, folder) for every skills root, lowest precedence first. Folders may not exist."""
    return [
        (SOURCE_SHIPPED, workspace_defaults_dir() / "skills"),
        (SOURCE_GLOBAL, workspace.global_skills_dir),
        (SOURCE_AGENTS, workspace.agents_skills_dir),
        (SOURCE_PROJECT, workspace.project_skills_dir),
    ]


def discover_skills(workspace: Workspace) -> SkillCatalog:
    catalog = SkillCatalog()
    for source, root in _distinct_roots(workspace):
        for directory in _skill_dirs(root):
            skill = _load_skill(directory, source, catalog)
            if skill is None:
                continue
            previous = catalog.skills.get(skill.name)
            if previous is not None:
                catalog.shadowed.append(ShadowedSkill(hidden=previous, winner=skill))
            catalog.skills[skill.name] = skill
    return catalog


def load_skill(directory: Path, source: str) -> Skill:
    """Load one skill folder. Raises FrontmatterError (or OSError) when it is not a valid skill."""
    path = directory / SKILL_FILE
    header = parse_skill_text(_read_text(path), directory.name)
    return Skill(
        name=header.name,
        description=header.description,
        body=header.body,
        path=path,
        directory=directory,
        always=header.always,
        source=source,
        license=header.license,
        compatibility=header.compatibility,
        metadata=header.metadata,
        allowed_tools=header.allowed_tools,
    )


def skill_fingerprint_paths(workspace: Workspace) -> list[Path]:
    """Every path whose mtime/size can change layer 4 of the prompt.

    Each root (a missing root is listed too, so creating it changes the fingerprint; the caller
    should treat a missing path as a distinct state), each skill folder and each SKILL.md. Adding or
    removing a folder changes its root's mtime; editing a SKILL.md changes its own.
    """
    paths: list[Path] = []
    for _source, root in _distinct_roots(workspace):
        paths.append(root)
        for directory in _skill_dirs(root, require_skill_file=False):
            paths.append(directory)
            skill_file = directory / SKILL_FILE
            if skill_file.is_file():
                paths.append(skill_file)
    return paths


def format_skills_table(catalog: SkillCatalog) -> str:
    """The text of `catbuddy skills`: one row per skill, then shadowed skills and problems."""
    lines: list[str] = []
    skills = catalog.all()
    if skills:
        rows = [("NAME", "SOURCE", "MODE", "DESCRIPTION")]
        rows += [
            (s.name, s.source, "always" if s.always else "on-demand", _clip(s.description)) for s in skills
        ]
        widths = [max(len(row[col]) for row in rows) for col in range(3)]
        for row in rows:
            lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    else:
        lines.append("No skills found.")
    if catalog.shadowed:
        lines += ["", "Shadowed:"]
        for entry in catalog.shadowed:
            lines.append(
                f"  {entry.hidden.name} ({entry.hidden.source}, {entry.hidden.path}) "
                f"is hidden by {entry.winner.source} {entry.winner.path}"
            )
    if catalog.problems:
        lines += ["", "Problems (these skills were skipped):"]
        lines += [f"  {problem.path}: {problem.message}" for problem in catalog.problems]
    return "\n".join(lines)


def _distinct_roots(workspace: Workspace) -> list[tuple[str, Path]]:
    # A folder reachable as two roots (odd home/work-root layouts) is scanned once, at its highest precedence.
    seen: set[Path] = set()
    kept: list[tuple[str, Path]] = []
    for source, root in reversed(skill_roots(workspace)):
        key = _resolved(root)
        if key not in seen:
            seen.add(key)
            kept.append((source, root))
    return kept[::-1]


def _skill_dirs(root: Path, require_skill_file: bool = True) -> list[Path]:
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        logger.warning("Cannot list skills folder %s: %s", root, exc)
        return []
    dirs = [entry for entry in entries if not entry.name.startswith(".") and entry.is_dir()]
    if require_skill_file:
        # A folder without SKILL.md is not a skill (scratch space, a half-made skill): ignored silently.
        dirs = [d for d in dirs if (d / SKILL_FILE).is_file()]
    return dirs


def _load_skill(directory: Path, source: str, catalog: SkillCatalog) -> Skill | None:
    path = directory / SKILL_FILE
    try:
        return load_skill(directory, source)
    except (FrontmatterError, OSError) as exc:
        message = str(exc) if isinstance(exc, FrontmatterError) else f"cannot read the file: {exc}"
        logger.warning("Skipping skill %s: %s", path, message)
        catalog.problems.append(SkillProblem(path=path, message=message))
        return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FrontmatterError("the file is not valid UTF-8 text") from exc


def _walk_files(directory: Path, scan_limit: int) -> Iterator[str]:
    count = 0
    for current, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in SKIPPED_DIR_NAMES]
        base = Path(current)
        for filename in filenames:
            relative = (base / filename).relative_to(directory).as_posix()
            if relative == SKILL_FILE or filename.startswith("."):
                continue
            count += 1
            if count > scan_limit:
                return
            yield relative


def _clip(text: str, width: int = TABLE_DESCRIPTION_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
