"""`catbuddy dream`, `catbuddy memory log|diff|undo`, `run --dream` and the memory part of `catbuddy
context`, as subprocesses against the scripted server."""

from __future__ import annotations

import json
from typing import Any

from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home

SECTIONS = ("## User Profile", "## Project Context")


def is_dream(body: dict[str, Any]) -> bool:
    text = "\n".join(content_text(m.get("content")) for m in body.get("messages") or [])
    return not body.get("tools") and all(mark in text for mark in SECTIONS)


class Model:
    """Dream requests take ``dream`` answers in order; everything else gets a short reply."""

    def __init__(self, *dream: str) -> None:
        self.dream = list(dream)
        self.dream_calls = 0

    def __call__(self, body: dict[str, Any]) -> Any:
        if not is_dream(body):
            return Reply.text("Noted.")
        self.dream_calls += 1
        return Reply.text(
            self.dream.pop(0) if self.dream else "## User Profile\n- NONE\n## Project Context\n- NONE"
        )


def memory_paths(project) -> MemoryPaths:
    return MemoryPaths.of(Workspace.at(project, default_home()))


def facts(user: str, project: str) -> str:
    return f"## User Profile\n- {user}\n\n## Project Context\n- {project}\n"


def test_sessions_then_dream_then_the_next_request_knows(cli, scripted_llm, project) -> None:
    model = Model(facts("ADD: Prefers pnpm over npm.", "ADD: Deploys run `make deploy`."))
    scripted_llm.push(*[model] * 6)
    assert cli("run", "I prefer pnpm over npm.").returncode == 0
    assert cli("run", "Deploys run make deploy.").returncode == 0
    paths = memory_paths(project)
    assert [e.kind for e in Journal(paths).pending().entries] == ["session", "session"]
    assert model.dream_calls == 0  # headless never dreams unless asked

    done = cli("dream")
    assert done.returncode == 0, done.stderr
    assert "Dream read 2 entries" in done.stdout and "+- Prefers pnpm over npm." in done.stdout
    assert "change #1" in done.stdout and "catbuddy memory undo" in done.stdout
    assert "- Prefers pnpm over npm." in paths.global_memory.read_text()
    assert "- Deploys run `make deploy`." in paths.project_memory.read_text()
    assert paths.cursor.read_text().strip() == "2"

    log = cli("memory", "log")
    assert log.returncode == 0 and "#1" in log.stdout and "dream" in log.stdout
    assert "global +" in log.stdout and "project +" in log.stdout
    entries = json.loads(cli("memory", "log", "--json").stdout)
    assert entries[0]["source"] == "dream" and len(entries[0]["sessions"]) == 2

    assert cli("run", "what do I prefer?").returncode == 0
    system = content_text(scripted_llm.requests[-1].messages[0]["content"])
    assert "Prefers pnpm over npm." in system and "Deploys run `make deploy`." in system


def test_a_dry_run_prints_the_diff_and_changes_nothing(cli, scripted_llm, project) -> None:
    scripted_llm.push(*[Model(facts("ADD: Likes tea.", "NONE"))] * 3)
    cli("run", "I like tea.")
    paths = memory_paths(project)
    before = paths.global_memory.read_text()
    done = cli("dream", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "+- Likes tea." in done.stdout and "nothing was written" in done.stdout
    assert paths.global_memory.read_text() == before and not paths.cursor.exists()


def test_garbage_twice_fails_with_exit_1_and_the_cursor_stays(cli, scripted_llm, project) -> None:
    scripted_llm.push(*[Model("I refuse to use your format.", "Still no.")] * 3)
    cli("run", "I like tea.")
    paths = memory_paths(project)
    before = paths.global_memory.read_text()
    done = cli("dream", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] == "failed" and "rejected twice" in result["message"]
    assert paths.global_memory.read_text() == before and not paths.cursor.exists()
    assert json.loads(cli("context", "--json", "--no-mcp").stdout)["memory"]["failures"] == 1


def test_diff_and_undo_review_and_roll_back(cli, scripted_llm, project) -> None:
    scripted_llm.push(*[Model(facts("NONE", "ADD: Uses tabs."))] * 3)
    cli("run", "we use tabs")
    paths = memory_paths(project)
    before = paths.project_memory.read_text() if paths.project_memory.exists() else None
    assert cli("dream").returncode == 0
    diff = cli("memory", "diff")
    assert diff.returncode == 0 and "+- Uses tabs." in diff.stdout
    assert cli("memory", "diff", "1").stdout == diff.stdout
    undo = cli("memory", "undo")
    assert undo.returncode == 0 and "Undid change #1 (dream" in undo.stdout
    after = paths.project_memory.read_text() if paths.project_memory.exists() else None
    assert after == before  # the template catbuddy's first run made, or no file at all
    log = cli("memory", "log").stdout
    assert "undoes #1" in log and "undone by #2" in log
    nothing = cli("memory", "undo")
    assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr


def test_an_unknown_change_exits_2_and_names_the_known_ones(cli, scripted_llm) -> None:
    empty = cli("memory", "diff")
    assert empty.returncode == 1 and "no memory changes yet" in empty.stderr
    assert "No memory changes yet" in cli("memory", "log").stdout
    bad = cli("memory", "diff", "99")
    assert bad.returncode == 2


def test_run_with_dream_dreams_after_the_turn(cli, scripted_llm, project) -> None:
    model = Model(facts("ADD: Works in UTC.", "NONE"))
    scripted_llm.push(*[model] * 3)
    done = cli("run", "I work in UTC.", "--dream")
    assert done.returncode == 0, done.stderr
    assert model.dream_calls == 1
    assert "memory: +1 −0 ~0 — catbuddy memory diff" in done.stderr
    assert "- Works in UTC." in memory_paths(project).global_memory.read_text()


def test_context_shows_pending_entries_and_the_last_dream(cli, scripted_llm, project) -> None:
    scripted_llm.push(*[Model(facts("ADD: Likes tea.", "NONE"))] * 3)
    cli("run", "I like tea.")
    text = cli("context", "--no-mcp").stdout
    assert "=== Memory ===" in text and "memory: 1 entry pending for Dream (cursor 0); Dream auto" in text
    assert "last Dream: never" in text
    cli("dream")
    data = json.loads(cli("context", "--json", "--no-mcp").stdout)["memory"]
    assert data["pending_entries"] == 0 and data["cursor"] == 1
    assert data["last_dream"]["status"] == "applied" and data["last_dream"]["added"] == 1


def test_a_bad_memory_setting_is_a_clear_error(cli, project) -> None:
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "config.toml").write_text('[memory]\ndream = "sometimes"\n')
    done = cli("dream")
    assert done.returncode == 2
    assert '`memory.dream` must be one of "auto", "ask", "off"' in done.stderr
    (project / ".catbuddy" / "config.toml").write_text("[memory]\nmemory_max_line = 10\n")
    done = cli("dream")
    assert done.returncode == 2 and "Did you mean `memory.memory_max_lines`?" in done.stderr


def test_ask_mode_without_a_terminal_does_not_apply_without_yes(cli, scripted_llm, project) -> None:
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "config.toml").write_text('[memory]\ndream = "ask"\n')
    scripted_llm.push(*[Model(facts("ADD: Likes tea.", "NONE"), facts("ADD: Likes tea.", "NONE"))] * 4)
    cli("run", "I like tea.")
    paths = memory_paths(project)
    done = cli("dream")
    assert done.returncode == 0 and "Use --yes to apply" in done.stdout
    assert "Likes tea" not in paths.global_memory.read_text() and not paths.cursor.exists()
    done = cli("dream", "--yes")
    assert done.returncode == 0 and "- Likes tea." in paths.global_memory.read_text()


def test_run_dream_in_ask_mode_proposes_but_never_waits_for_an_answer(cli, scripted_llm, project) -> None:
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "config.toml").write_text('[memory]\ndream = "ask"\n')
    scripted_llm.push(*[Model(facts("ADD: Likes tea.", "NONE"))] * 4)
    done = cli("run", "--stream-json", "--approvals-from-stdin", "--dream", "I like tea.")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    dream = next(e for e in events if e["kind"] == "dream")
    assert dream["status"] == "deferred" and "catbuddy dream" in dream["message"]
    assert not any(e["kind"] == "dream_proposal" for e in events)
    assert "Likes tea" not in memory_paths(project).global_memory.read_text()


def test_a_corrupt_journal_line_is_reported_and_the_rest_is_dreamt(cli, scripted_llm, project) -> None:
    scripted_llm.push(*[Model(facts("ADD: Likes tea.", "NONE"))] * 3)
    cli("run", "I like tea.")
    paths = memory_paths(project)
    with paths.journal.open("a") as handle:
        handle.write("{not json\n")
    assert "line 2: skipped, not JSON" in cli("context", "--no-mcp").stdout
    done = cli("dream")
    assert done.returncode == 0, done.stderr
    assert "warning:" in done.stdout and "line 2: skipped" in done.stdout
    assert "- Likes tea." in paths.global_memory.read_text()
