"""The paths the `@` picker offers: git's list when the work root is in a repository (tracked files and
untracked ones not ignored), else a bounded walk that honours `.gitignore` files and skips the usual
heavy folders. Folders that hold listed files are offered too (`src/`). Runs in a worker thread."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from catbuddy.tools.files import is_ignored_dir

MAX_FILES = 200_000  # a walk stops here: the picker stays responsive in a home directory
GIT_TIMEOUT = 10.0  # seconds


@dataclass
class FileIndex:
    paths: list[str]  # relative, "/"-separated; folders end with "/"
    source: str  # "git" or "walk"
    truncated: bool = False


def list_files(root: Path, limit: int = MAX_FILES) -> FileIndex:
    files = _git_files(root)
    if files is not None:
        return FileIndex(_with_folders(files[:limit]), "git", len(files) > limit)
    walked, truncated = _walk(root, limit)
    return FileIndex(_with_folders(walked), "walk", truncated)


def _git_files(root: Path) -> list[str] | None:
    """`git ls-files` of the work root (paths relative to it), or None when it is no repository."""
    command = ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    # One blocking read with a watchdog: subprocess.run(timeout=…) polls in small chunks, 2× slower here.
    watchdog = threading.Timer(GIT_TIMEOUT, process.kill)
    watchdog.start()
    try:
        output = process.stdout.read() if process.stdout is not None else b""
        code = process.wait()
    finally:
        watchdog.cancel()
        if process.stdout is not None:
            process.stdout.close()
    if code != 0:
        return None
    names = output.decode("utf-8", "replace").split("\0")
    return list(dict.fromkeys(name for name in names if name))  # a conflicted file is listed per stage


def _with_folders(files: list[str]) -> list[str]:
    """The files, then every folder that holds one (`src/`, `src/app/`), each once."""
    parents = {name.rpartition("/")[0] for name in files}
    parents.discard("")
    folders = set(parents)
    for folder in parents:
        cut = folder.rfind("/")
        while cut > 0 and folder[:cut] not in folders:
            folders.add(folder[:cut])
            cut = folder.rfind("/", 0, cut)
    return files + sorted(f"{folder}/" for folder in folders)


@dataclass
class _Rules:
    """The `.gitignore` patterns in force in one folder (its own and its parents')."""

    patterns: list[tuple[str, str, bool, bool, bool]] = field(default_factory=list)
    # (base folder relative to the root, pattern, negated, folders only, anchored)

    def extended(self, folder: str, text: str) -> _Rules:
        added = list(self.patterns)
        for line in text.splitlines():
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            added.append((folder, line.lstrip("/"), negated, dir_only, anchored))
        return _Rules(added)

    def ignores(self, relative: str, is_dir: bool) -> bool:
        ignored = False
        name = relative.rsplit("/", 1)[-1]
        for base, pattern, negated, dir_only, anchored in self.patterns:
            if dir_only and not is_dir:
                continue
            if base and not relative.startswith(base):
                continue
            target = relative[len(base) :] if anchored else name
            if fnmatch.fnmatchcase(target, pattern):
                ignored = not negated
        return ignored


def _walk(root: Path, limit: int) -> tuple[list[str], bool]:
    found: list[str] = []
    stack: list[tuple[Path, str, _Rules]] = [(root, "", _Rules())]
    while stack:
        folder, prefix, rules = stack.pop()
        rules = _read_rules(folder, prefix, rules)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subfolders = []
        for entry in entries:
            relative = prefix + entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if (is_dir and (is_ignored_dir(entry.name) or entry.name == ".git")) or rules.ignores(
                relative, is_dir
            ):
                continue
            if is_dir:
                subfolders.append((Path(entry.path), relative + "/", rules))
                continue
            found.append(relative)
            if len(found) >= limit:
                return found, True
        stack.extend(reversed(subfolders))
    return found, False


def _read_rules(folder: Path, prefix: str, rules: _Rules) -> _Rules:
    try:
        text = (folder / ".gitignore").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return rules
    return rules.extended(prefix, text)
