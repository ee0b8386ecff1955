"""Project instructions as other agents read them: `AGENTS.md` in every folder from the git root down to
the work root (outermost first, so the nearest comes last and has the final word), and `CLAUDE.md` in a
folder that has no `AGENTS.md`. Without a git root, only the work root's. When none is found anywhere,
`.catbuddy/AGENTS.md` (or the shipped default in its place) is the project's instructions, as before.

Everything here is a few ``stat`` calls: the builder computes the candidate paths once and watches
them all in its fingerprint, so a file added, edited or removed in any of those folders rebuilds the
prompt on the next request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")  # per folder, the first that exists is read
GIT_MARKER = ".git"  # a folder in a clone, a file in a worktree or submodule


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    label: str  # its path relative to the git root (or the work root without one): the heading


def git_root(work_root: Path) -> Path | None:
    """The nearest folder at or above ``work_root`` holding `.git`; None outside a repository."""
    for folder in (work_root, *work_root.parents):
        if (folder / GIT_MARKER).exists():
            return folder
    return None


def instruction_dirs(work_root: Path) -> list[Path]:
    """The folders whose instructions apply, outermost first: git root … work root."""
    top = git_root(work_root)
    if top is None or top == work_root:
        return [work_root]
    chain = [work_root]
    for folder in work_root.parents:
        chain.append(folder)
        if folder == top:
            break
    return list(reversed(chain))


def candidate_paths(work_root: Path) -> list[Path]:
    """Every path that could hold instructions (existing or not), for the fingerprint."""
    return [folder / name for folder in instruction_dirs(work_root) for name in INSTRUCTION_NAMES]


def instruction_files(work_root: Path) -> list[InstructionFile]:
    """The instruction files in force, outermost first."""
    folders = instruction_dirs(work_root)
    base = folders[0]
    found: list[InstructionFile] = []
    for folder in folders:
        for name in INSTRUCTION_NAMES:
            path = folder / name
            if path.is_file():
                found.append(InstructionFile(path, path.relative_to(base).as_posix()))
                break
    return found


def nearest_instructions(work_root: Path) -> Path | None:
    """The innermost instruction file in force (what `/edit AGENTS.md` opens), if any."""
    files = instruction_files(work_root)
    return files[-1].path if files else None
