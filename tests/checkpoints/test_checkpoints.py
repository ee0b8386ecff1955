"""The shadow repository and the turn checkpoints on real work trees: destructive commands are undone,
the user's repository is never touched, ignored and oversized files are left out, and a checkpoint that
cannot be taken says so without stopping anything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from catbuddy.checkpoints.manager import Checkpoints

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def sh(root: Path, command: str) -> None:
    subprocess.run(command, shell=True, cwd=root, check=True, capture_output=True)


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('committed')\n")
    (root / "README.md").write_text("readme\n")
    sh(root, "git init -q && git add -A && " + " ".join(GIT) + " commit -qm start")
    (root / "src" / "app.py").write_text("print('uncommitted work')\n")
    (root / "scratch").mkdir()
    (root / "scratch" / "notes.txt").write_text("untracked notes\n")
    return root


def checkpoints(tmp_path: Path, root: Path, max_bytes: int = 1_000_000) -> Checkpoints:
    return Checkpoints(tmp_path / "home" / "project", root, max_bytes)


@pytest.mark.parametrize(
    "command",
    [
        "git reset --hard -q",
        "git checkout -- .",
        "git clean -fdq",
        "rm -r src scratch",
        "echo overwritten > README.md",
        "git stash -q",
    ],
)
def test_a_destructive_command_is_undone_with_the_uncommitted_work(tmp_path, repo, command):
    before = tree(repo)
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    assert cp.before_write() == []
    sh(repo, command)
    assert tree(repo) != before
    cp.end_turn()

    restore = cp.plan_undo()
    assert restore is not None and restore.conflicts == []
    cp.apply(restore, undo=True)
    assert tree(repo) == before


def test_the_users_repository_is_never_touched(tmp_path, repo):
    refs = subprocess.run(["git", "for-each-ref"], cwd=repo, capture_output=True, text=True).stdout
    index = (repo / ".git" / "index").read_bytes()
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    (repo / "README.md").write_text("changed\n")
    cp.end_turn()
    cp.apply(cp.plan_undo(), undo=True)  # type: ignore[arg-type]
    assert subprocess.run(["git", "for-each-ref"], cwd=repo, capture_output=True, text=True).stdout == refs
    assert (repo / ".git" / "index").read_bytes() == index
    assert not (repo / ".git" / "refs" / "stash").exists()


def test_a_project_that_is_not_a_git_repository_works_the_same(tmp_path):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    cp = checkpoints(tmp_path, root)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    sh(root, "rm a.txt && echo b > b.txt")
    cp.end_turn()
    cp.apply(cp.plan_undo(), undo=True)  # type: ignore[arg-type]
    assert tree(root) == {"a.txt": b"a\n"}


def test_ignored_and_oversized_files_are_left_out_and_named_once(tmp_path, repo):
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\0" * 10)
    (repo / "huge.bin").write_bytes(b"x" * 2_000)
    cp = checkpoints(tmp_path, repo, max_bytes=1_000)
    cp.begin_turn("s1", "m000001")
    notices = cp.before_write()
    assert len(notices) == 1 and "huge.bin" in notices[0] and "build" not in notices[0]
    (repo / "README.md").write_text("changed\n")
    (repo / "huge.bin").write_bytes(b"y" * 3_000)
    cp.end_turn()
    restore = cp.plan_undo()
    assert restore is not None and restore.paths == ["README.md"]  # never the ignored or huge files
    cp.begin_turn("s1", "m000003")
    assert cp.before_write() == []  # said once


def test_the_user_changing_a_file_after_the_turn_is_a_conflict(tmp_path, repo):
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    (repo / "README.md").write_text("by the agent\n")
    (repo / "new.txt").write_text("by the agent\n")
    cp.end_turn()
    (repo / "README.md").write_text("by the user afterwards\n")
    restore = cp.plan_undo()
    assert restore is not None and restore.conflicts == ["README.md"]
    assert cp.apply(restore, undo=True) == ["new.txt"]  # the conflict is kept unless overwritten
    assert (repo / "README.md").read_text() == "by the user afterwards\n"


def test_undo_walks_back_and_redo_puts_back(tmp_path, repo):
    cp = checkpoints(tmp_path, repo)
    for n, text in enumerate(["one\n", "two\n"], 1):
        cp.begin_turn("s1", f"m00000{n}")
        cp.before_write()
        (repo / "README.md").write_text(text)
        cp.end_turn()
    cp.apply(cp.plan_undo(), undo=True)  # type: ignore[arg-type]
    assert (repo / "README.md").read_text() == "one\n"
    cp.apply(cp.plan_undo(), undo=True)  # type: ignore[arg-type]
    assert (repo / "README.md").read_text() == "readme\n"
    assert cp.plan_undo() is None
    cp.apply(cp.plan_redo(), undo=False)  # type: ignore[arg-type]
    assert (repo / "README.md").read_text() == "one\n"


def test_a_checkpoint_that_fails_says_the_turn_cannot_be_undone(tmp_path, repo):
    blocker = tmp_path / "home"
    blocker.write_text("a file where the shadow repository's folder should be")
    cp = Checkpoints(blocker / "project", repo, 1_000_000)
    cp.begin_turn("s1", "m000001")
    [notice] = cp.before_write()
    assert "this turn cannot be undone" in notice
    assert cp.before_write() == []  # said once per turn
    assert cp.end_turn() is None


def test_without_git_checkpoints_are_off(tmp_path, repo, monkeypatch):
    monkeypatch.setattr("catbuddy.checkpoints.manager.git_available", lambda: False)
    cp = checkpoints(tmp_path, repo)
    assert not cp.enabled and cp.missing_git
    cp.begin_turn("s1", "m000001")
    assert cp.before_write() == [] and cp.end_turn() is None


def test_a_turn_of_file_tools_hashes_just_their_files(tmp_path, repo):
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    cp.note_writes([repo / "README.md"])
    (repo / "README.md").write_text("by the agent's edit_file\n")
    (repo / "other.txt").write_text("by the user, meanwhile\n")
    cp.end_turn()
    restore = cp.plan_undo()
    assert restore is not None and restore.paths == ["README.md"]  # the user's file is not the turn's


def test_a_command_in_the_turn_makes_the_capture_scan_the_tree(tmp_path, repo):
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    cp.note_writes([repo / "README.md"])
    cp.note_writes(None)  # exec: it could write anything
    sh(repo, "echo made > made.txt")
    cp.end_turn()
    restore = cp.plan_undo()
    assert restore is not None and restore.paths == ["made.txt"]


def test_catbuddys_home_inside_the_work_root_is_never_captured(tmp_path):
    root = tmp_path / "everything"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    home = root / ".catbuddy-home"
    cp = Checkpoints(home / "projects" / "p", root, 1_000_000, home=home)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    (root / "a.txt").write_text("b\n")
    (home / "projects" / "p" / "sessions").mkdir(parents=True)
    (home / "projects" / "p" / "sessions" / "s1.jsonl").write_text("{}\n")
    cp.end_turn()
    restore = cp.plan_undo()
    assert restore is not None and restore.paths == ["a.txt"]


def test_the_warm_up_does_the_first_capture_and_its_exclusions_are_still_said(tmp_path, repo):
    (repo / "huge.bin").write_bytes(b"x" * 2_000)
    cp = checkpoints(tmp_path, repo, max_bytes=1_000)
    cp.warm_up()
    cp.begin_turn("s1", "m000001")
    [notice] = cp.before_write()
    assert "huge.bin" in notice


def test_a_noted_file_git_ignores_falls_back_to_a_scan(tmp_path, repo):
    (repo / ".gitignore").write_text("build/\n")
    cp = checkpoints(tmp_path, repo)
    cp.begin_turn("s1", "m000001")
    cp.before_write()
    (repo / "build").mkdir()
    (repo / "build" / "out.txt").write_text("ignored output\n")
    (repo / "README.md").write_text("edited\n")
    cp.note_writes([repo / "build" / "out.txt", repo / "README.md"])
    assert cp.end_turn() is not None
    restore = cp.plan_undo()
    assert restore is not None and restore.paths == ["README.md"]
