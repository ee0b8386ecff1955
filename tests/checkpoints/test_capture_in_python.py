"""A turn's capture written from Python (checkpoints/objects.py) is the tree git itself would write: the
same id, for every kind of change, whether git or Python took it; and the shadow keeps the files' bytes
whatever the project's .gitattributes or the user's git filters say."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catbuddy.checkpoints.manager import Checkpoints
from catbuddy.checkpoints.shadow import ShadowRepo

CAP = 1000  # bytes: the size cap in these tests


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for relative, text in {
        "a.txt": "alpha\n",
        "src/app.py": "print('app')\n",
        "src/lib/util.py": "def util(): ...\n",
        "bin/run.sh": "#!/bin/sh\necho run\n",
        ".gitignore": "*.log\nbuild/\n",
        "vendor/sub/inner.txt": "nested\n",
    }.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    (root / "bin/run.sh").chmod(0o755)
    os.symlink("a.txt", root / "link")
    subprocess.run(["git", "init", "-q"], cwd=root / "vendor/sub", check=True)  # a nested repository
    return root


def reference_tree(tmp_path: Path, root: Path) -> str:
    """What git writes for the work tree now, from scratch, in a shadow of its own."""
    fresh = tmp_path / f"reference-{len(list(tmp_path.glob('reference-*')))}"
    return ShadowRepo(fresh, root, CAP).snapshot().tree


def git_commands(shadow: ShadowRepo, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The git subcommands the shadow runs from now on."""
    seen: list[str] = []
    run = shadow._run

    def recording(*args: str, **options: Any) -> subprocess.CompletedProcess[bytes]:
        seen.append(args[0])
        return run(*args, **options)

    monkeypatch.setattr(shadow, "_run", recording)
    return seen


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


# (a change to the work tree, the paths a file tool would note)
CHANGES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "a modified file": (lambda r: append(r / "a.txt", "beta\n"), ["a.txt"]),
    "a new file in new folders": (
        lambda r: (r / "deep/er").mkdir(parents=True) or (r / "deep/er/new.txt").write_text("new\n"),
        ["deep/er/new.txt"],
    ),
    "a deleted file that empties its folder": (lambda r: (r / "src/lib/util.py").unlink(), ["src/lib/util.py"]),
    "an executable bit set": (lambda r: (r / "a.txt").chmod(0o755), ["a.txt"]),
    "an executable bit cleared": (lambda r: (r / "bin/run.sh").chmod(0o644), ["bin/run.sh"]),
    "a symlink pointed elsewhere": (
        lambda r: (r / "link").unlink() or os.symlink("src/app.py", r / "link"),
        ["link"],
    ),
    "a new file beside others": (lambda r: (r / "src/z.py").write_text("z\n"), ["src/z.py"]),
    "a name that sorts around a folder": (lambda r: (r / "src.py").write_text("x\n"), ["src.py"]),
    "an empty file": (lambda r: (r / "empty").write_bytes(b""), ["empty"]),
    "bytes that are not UTF-8": (lambda r: (r / "blob.bin").write_bytes(bytes(range(256))), ["blob.bin"]),
}


@pytest.mark.parametrize("case", CHANGES)
def test_a_noted_change_is_captured_without_git_as_the_tree_git_writes(tmp_path, root, case, monkeypatch):
    shadow = ShadowRepo(tmp_path / "shadow", root, CAP)
    shadow.snapshot()
    change, noted = CHANGES[case]
    change(root)
    commands = git_commands(shadow, monkeypatch)

    captured = shadow.snapshot(noted)

    assert captured.tree == reference_tree(tmp_path, root)
    assert "add" not in commands and "write-tree" not in commands


@pytest.mark.parametrize("case", CHANGES)
def test_a_scanned_change_is_captured_as_the_tree_git_writes(tmp_path, root, case, monkeypatch):
    shadow = ShadowRepo(tmp_path / "shadow", root, CAP)
    shadow.snapshot()
    CHANGES[case][0](root)
    commands = git_commands(shadow, monkeypatch)

    captured = shadow.snapshot()

    assert captured.tree == reference_tree(tmp_path, root)
    assert commands == ["ls-files"]  # the scan, and nothing else


@pytest.mark.parametrize(
    ("case", "make", "noted"),
    [
        ("an ignored new file", lambda r: (r / "trace.log").write_text("x\n"), ["trace.log"]),
        ("a file in an ignored folder", lambda r: (r / "build").mkdir() or (r / "build/o").write_text("x"),
         ["build/o"]),
        ("a new file in a nested repository", lambda r: (r / "vendor/sub/f.txt").write_text("x\n"),
         ["vendor/sub/f.txt"]),
        ("a file over the size cap", lambda r: (r / "big.bin").write_bytes(b"x" * (CAP + 1)), ["big.bin"]),
        ("a folder where a file was", lambda r: (r / "a.txt").unlink() or (r / "a.txt").mkdir()
         or (r / "a.txt/in").write_text("in\n"), ["a.txt/in"]),
    ],
)  # fmt: skip
def test_what_git_must_decide_is_left_to_git_and_ends_as_git_has_it(tmp_path, root, case, make, noted):
    shadow = ShadowRepo(tmp_path / "shadow", root, CAP)
    shadow.snapshot()
    make(root)

    captured = shadow.snapshot(noted)

    assert captured.tree == reference_tree(tmp_path, root)


def test_turns_captured_from_python_then_one_by_git_leave_the_index_in_step(tmp_path, root, monkeypatch):
    shadow = ShadowRepo(tmp_path / "shadow", root, CAP)
    shadow.snapshot()
    (root / "one.txt").write_text("1\n")
    shadow.snapshot(["one.txt"])
    append(root / "a.txt", "more\n")
    shadow.snapshot(["a.txt"])
    (root / "one.txt").unlink()  # new since git last staged, and gone again
    (root / "big.bin").write_bytes(b"x" * (CAP + 1))  # git's to decide: it stages the others too

    by_git = shadow.snapshot()
    commands = git_commands(shadow, monkeypatch)
    again = shadow.snapshot()

    assert by_git.tree == again.tree == reference_tree(tmp_path, root)
    assert by_git.skipped == ["big.bin"]
    assert commands == ["ls-files"]  # the index caught up: the scan finds nothing left to capture


def test_crlf_files_and_filtered_files_are_kept_byte_for_byte(tmp_path, root, monkeypatch):
    # `* text=auto` would store CRLF files with LF, and a clean filter (Git LFS is one) a pointer: undo
    # would then write back something else than was there.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text('[filter "upper"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n')
    monkeypatch.setenv("HOME", str(home))
    (root / ".gitattributes").write_text("* text=auto\n*.dat filter=upper\n")
    (root / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    (root / "data.dat").write_text("lower case\n")
    checkpoints = Checkpoints(tmp_path / "project", root, CAP)
    checkpoints.begin_turn("s", "m000001")
    checkpoints.before_write()
    (root / "dos.txt").write_bytes(b"changed\r\n")
    (root / "data.dat").write_text("changed\n")
    checkpoints.end_turn()

    restore = checkpoints.plan_undo()
    assert restore is not None and not restore.conflicts
    checkpoints.apply(restore, undo=True)

    assert (root / "dos.txt").read_bytes() == b"one\r\ntwo\r\n"
    assert (root / "data.dat").read_text() == "lower case\n"
