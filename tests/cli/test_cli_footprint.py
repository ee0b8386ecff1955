"""The first run in a directory leaves nothing in the repository: the shipped defaults are read in place,
and only a file someone edits (the user, the model, Dream) is created, that one alone."""

from __future__ import annotations

import json
import subprocess

import pytest

from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.versions import MemoryVersions
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home, shipped_default

MEMORY_TEMPLATE_LINE = "<!-- Lasting facts will be recorded here, as dated bullet lines grouped under headings. -->"


@pytest.fixture
def repo(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "app.py").write_text("print('hi')\n")
    subprocess.run(["git", "-C", str(project), "add", "app.py"], check=True)
    subprocess.run(
        ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"],
        check=True,
    )
    return project


def git_status(repo) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all", "--ignored"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def test_run_context_and_the_other_commands_leave_the_repository_clean(cli, scripted_llm, repo, tmp_path):
    scripted_llm.push(Reply.tool_call("read_file", {"path": ".catbuddy/MEMORY.md"}), Reply.text("done"))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))

    assert cli("run", "hi").returncode == 0
    for command in (
        ["context"],
        ["context", "--json"],
        ["sessions"],
        ["skills"],
        ["doctor"],
        ["memory", "log"],
        ["count", str(request)],
        ["compact"],
        ["mcp", "list"],
    ):
        done = cli(*command)
        assert done.returncode in (0, 1), (command, done.stderr)  # doctor may report a missing sandbox

    assert git_status(repo) == []


def test_the_prompt_reads_the_shipped_defaults_in_place(cli, scripted_llm, repo):
    scripted_llm.push(Reply.text("ok"))

    assert cli("run", "hi").returncode == 0

    system = scripted_llm.requests[0].messages[0]["content"]
    assert "## AGENTS.md" in system and "## SOUL.md" in system and "## TOOLS.md" in system
    assert "cat-spirit coding companion" in system
    assert git_status(repo) == []


def test_reading_a_missing_memory_file_shows_the_template(cli, scripted_llm, repo):
    scripted_llm.push(Reply.tool_call("read_file", {"path": ".catbuddy/MEMORY.md"}), Reply.text("ok"))

    assert cli("run", "hi").returncode == 0

    result = scripted_llm.requests[1].messages[-1]["content"]
    assert MEMORY_TEMPLATE_LINE in result and "does not exist yet" in result
    assert git_status(repo) == []


def test_the_model_editing_memory_creates_exactly_that_file(cli, scripted_llm, repo):
    scripted_llm.push(
        Reply.tool_call(
            "edit_file",
            {
                "path": ".catbuddy/MEMORY.md",
                "old_string": MEMORY_TEMPLATE_LINE,
                "new_string": "## Testing\n- 2026-01-01: run `pytest -q`.",
            },
        ),
        Reply.text("Recorded."),
    )

    assert cli("run", "remember how to test").returncode == 0

    assert git_status(repo) == ["?? .catbuddy/MEMORY.md"]
    text = (repo / ".catbuddy" / "MEMORY.md").read_text()
    assert text.startswith("# Memory") and "run `pytest -q`" in text and MEMORY_TEMPLATE_LINE not in text
    assert "Created .catbuddy/MEMORY.md from the shipped default" in scripted_llm.requests[1].messages[-1]["content"]


def test_the_model_writing_a_workspace_file_creates_only_it(cli, scripted_llm, repo):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": ".catbuddy/USER.md", "content": "# User\n- Name: Ada\n"}),
        Reply.text("ok"),
    )

    assert cli("run", "I am Ada").returncode == 0

    assert git_status(repo) == ["?? .catbuddy/USER.md"]


def test_an_edit_that_does_not_match_the_default_creates_nothing(cli, scripted_llm, repo):
    scripted_llm.push(
        Reply.tool_call("edit_file", {"path": ".catbuddy/SOUL.md", "old_string": "no such text", "new_string": "x"}),
        Reply.text("ok"),
    )

    assert cli("run", "hi").returncode == 0

    assert "old_string was not found" in scripted_llm.requests[1].messages[-1]["content"]
    assert git_status(repo) == []


def test_editing_an_ordinary_missing_file_is_still_not_found(cli, scripted_llm, repo):
    scripted_llm.push(
        Reply.tool_call("edit_file", {"path": "notes.md", "old_string": "a", "new_string": "b"}),
        Reply.text("ok"),
    )

    assert cli("run", "hi").returncode == 0

    assert "File not found: notes.md" in scripted_llm.requests[1].messages[-1]["content"]


def test_a_memory_write_like_dreams_creates_only_the_project_memory(repo):
    workspace = Workspace.at(repo, default_home())

    MemoryVersions(MemoryPaths.of(workspace)).write({"project": "# Memory\n- a fact\n"}, source="dream")

    assert git_status(repo) == ["?? .catbuddy/MEMORY.md"]


def test_memory_undo_of_that_first_write_leaves_no_memory_file(cli, repo):
    workspace = Workspace.at(repo, default_home())
    MemoryVersions(MemoryPaths.of(workspace)).write({"project": "# Memory\n- a fact\n"}, source="dream")

    done = cli("memory", "undo")

    assert done.returncode == 0, done.stderr
    assert not workspace.project_memory.exists()


def test_init_still_writes_every_workspace_file_on_request(cli, repo):
    done = cli("init")

    assert done.returncode == 0
    created = sorted(line for line in git_status(repo))
    assert created == sorted(
        f"?? .catbuddy/{name}" for name in ("AGENTS.md", "MEMORY.md", "SOUL.md", "TOOLS.md", "USER.md")
    )
    assert (repo / ".catbuddy" / "SOUL.md").read_text() == shipped_default("SOUL.md")
    assert (repo / ".catbuddy" / "skills").is_dir()
