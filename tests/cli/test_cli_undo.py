"""`catbuddy undo` after a headless yolo turn that destroyed uncommitted work (issue 26's check): the turn
edits two files, creates one with a command and runs `git reset --hard`; undo brings back exactly the
state before the turn, keeping a file the user changed in between."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def git(project: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=project, check=True, capture_output=True, text=True).stdout


def files(project: Path) -> dict[str, str]:
    return {
        str(p.relative_to(project)): p.read_text()
        for p in sorted(project.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(project).parts
    }


def repository_with_uncommitted_work(project: Path) -> None:
    (project / "app.py").write_text("def main():\n    return 1\n")
    (project / "util.py").write_text("def helper():\n    return 'a'\n")
    (project / "notes.txt").write_text("committed notes\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "start")
    # Uncommitted work: a changed tracked file and an untracked one.
    (project / "app.py").write_text("def main():\n    return 2  # work in progress\n")
    (project / "draft.md").write_text("my untracked draft\n")


def destructive_turn(llm) -> None:
    llm.push(
        Reply.tool_call("edit_file", {"path": "app.py", "old_string": "return 2", "new_string": "return 3"}),
        Reply.tool_call("edit_file", {"path": "util.py", "old_string": "'a'", "new_string": "'b'"}),
        Reply.tool_call("exec", {"command": "echo generated > made.txt"}),
        Reply.tool_call("exec", {"command": "git reset --hard -q"}),
        Reply.text("Done."),
    )


def test_undo_brings_back_the_work_git_reset_hard_destroyed(cli, scripted_llm, project):
    repository_with_uncommitted_work(project)
    before = files(project)
    destructive_turn(scripted_llm)

    done = cli("run", "tidy up")
    assert done.returncode == 0, done.stderr
    assert (project / "app.py").read_text() == "def main():\n    return 1\n"  # the work was lost
    assert (project / "made.txt").exists()
    (project / "notes.txt").write_text("the user's own change after the turn\n")

    undone = cli("undo")

    assert undone.returncode == 0, undone.stderr
    assert files(project) == {**before, "notes.txt": "the user's own change after the turn\n"}
    assert "app.py" in undone.stdout and "made.txt" in undone.stdout
    assert "notes.txt" not in undone.stdout
    # The model hears of it with the next message of the session.
    scripted_llm.push(Reply.text("ok"))
    assert cli("run", "--continue", "go on").returncode == 0
    told = str(scripted_llm.requests[-1]["messages"][-1]["content"])
    assert told.startswith("go on") and "ran undo; these files are back as they were before turn t1" in told
    # The user's repository got no stash, branch or commit from catbuddy.
    assert git(project, "stash", "list") == "" and len(git(project, "for-each-ref").splitlines()) == 1


def test_undo_refuses_headless_when_the_user_changed_a_file_the_turn_changed(cli, scripted_llm, project):
    repository_with_uncommitted_work(project)
    destructive_turn(scripted_llm)
    assert cli("run", "tidy up").returncode == 0
    (project / "made.txt").write_text("the user edited the generated file\n")
    after = files(project)

    refused = cli("undo")

    assert refused.returncode == 1
    assert "made.txt" in refused.stderr and "--force" in refused.stderr
    assert files(project) == after  # nothing was restored
    forced = cli("undo", "--force")
    assert forced.returncode == 0 and not (project / "made.txt").exists()


def test_nothing_to_undo_says_so_and_exits_0(cli, project):
    done = cli("undo")
    assert done.returncode == 0 and "Nothing to undo" in done.stdout


def test_redo_puts_the_turn_back_and_the_session_records_both(cli, scripted_llm, project):
    repository_with_uncommitted_work(project)
    destructive_turn(scripted_llm)
    assert cli("run", "tidy up").returncode == 0
    after_turn = files(project)
    assert cli("undo").returncode == 0
    redone = cli("redo")
    assert redone.returncode == 0, redone.stderr
    assert files(project) == after_turn
    [info] = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()
    events = [json.loads(line) for line in info.path.read_text().splitlines()]
    kinds = [(e["kind"], e.get("action")) for e in events if e.get("type") == "event"]
    assert ("checkpoint", None) in kinds
    assert kinds[-2:] == [("files_restored", "undo"), ("files_restored", "redo")]


def session_of(project: Path):
    [info] = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()
    return info


def test_rewind_restores_files_and_the_resumed_session_forgets_the_turn(cli, scripted_llm, project):
    repository_with_uncommitted_work(project)
    before = files(project)
    destructive_turn(scripted_llm)
    assert cli("run", "tidy up").returncode == 0
    session = session_of(project).id

    done = cli("rewind", "--session", session, "--to", "m000001")

    assert done.returncode == 0, done.stderr
    assert files(project) == before
    scripted_llm.push(Reply.text("hello again"))
    assert cli("run", "--resume", session, "start over").returncode == 0
    users = [str(m["content"]) for m in scripted_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-1].startswith("start over") and not any(u.startswith("tidy up") for u in users)


def test_rewind_of_an_unknown_message_exits_1_and_changes_nothing(cli, scripted_llm, project):
    repository_with_uncommitted_work(project)
    destructive_turn(scripted_llm)
    assert cli("run", "tidy up").returncode == 0
    after = files(project)
    done = cli("rewind", "--session", session_of(project).id, "--to", "m000099")
    assert done.returncode == 1 and "m000099" in done.stderr and "Traceback" not in done.stderr
    assert files(project) == after


def test_sessions_fork_starts_a_session_with_the_history(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("first answer"))
    assert cli("run", "first question").returncode == 0
    source = session_of(project).id

    done = cli("sessions", "fork", source)

    assert done.returncode == 0, done.stderr
    infos = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()
    fork = next(i for i in infos if i.id != source)
    assert fork.id in done.stdout and fork.message_count == 2
