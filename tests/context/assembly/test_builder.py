"""ContextBuilder: five layers in order, fingerprint cache, runtime block kept out of the system prompt."""

from __future__ import annotations

import builtins
import io
import os
import pathlib
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.context.assembly.builder import LAYER_SEPARATOR, ContextBuilder
from catbuddy.messages import strip_runtime_block
from catbuddy.workspace import Workspace


@pytest.fixture
def ws(workspace: Workspace) -> Workspace:
    workspace.ensure_home()
    workspace.init_project()
    return workspace


def builder(ws: Workspace, **settings) -> ContextBuilder:
    fixed = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)
    return ContextBuilder(ws, Settings(**settings), clock=lambda: fixed)


def touch(path: Path, text: str) -> None:
    """Write and move the mtime forward, so the change is visible even on coarse clocks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time_ns() + 10_000_000
    os.utime(path, ns=(stamp, stamp))


def add_skill(root: Path, name: str, body: str = "Do the thing.", always: bool = False) -> Path:
    path = root / name / "SKILL.md"
    extra = "always: true\n" if always else ""
    touch(path, f"---\nname: {name}\ndescription: {name} helper\n{extra}---\n{body}\n")
    return path


class FakeMcp:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def runtime_lines(self) -> list[str]:
        return list(self.lines)

    def runtime_fingerprint(self) -> str:
        return "|".join(self.lines)


def test_layers_come_in_order_separated_by_rules(ws: Workspace) -> None:
    touch(ws.project_memory, "# Project Memory\n- uses uv")
    source = FakeMcp()
    source.lines = ["- MCP server time: mcp__time__get_current_time"]
    b = builder(ws)
    b.add_runtime_source(source)
    text = b.system_prompt()
    markers = [
        "You are catbuddy",
        "## AGENTS.md",
        "## Project Memory",
        "## Always-On Skills",
        "## Runtime Context",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)
    assert text.count(LAYER_SEPARATOR) == 4


def test_bootstrap_files_in_order(ws: Workspace) -> None:
    text = builder(ws).system_prompt()
    names = ["## AGENTS.md", "## SOUL.md", "## USER.md", "## TOOLS.md"]
    assert [text.index(n) for n in names] == sorted(text.index(n) for n in names)


def test_a_missing_file_reads_as_the_shipped_default_and_an_empty_one_is_skipped(ws: Workspace) -> None:
    (ws.project_dir / "SOUL.md").unlink()
    touch(ws.project_dir / "TOOLS.md", "   \n")
    text = builder(ws).system_prompt()
    assert "## SOUL.md" in text and "cat-spirit coding companion" in text
    assert "## TOOLS.md" not in text
    assert "## AGENTS.md" in text


def test_default_memory_is_not_injected(ws: Workspace) -> None:
    text = builder(ws).system_prompt()
    assert "## Project Memory" not in text
    assert "## Long-Term Memory (You)" not in text


def test_both_memories_are_injected_when_they_hold_facts(ws: Workspace) -> None:
    touch(ws.global_memory, "- prefers tabs")
    touch(ws.project_memory, "- deploys with make ship")
    text = builder(ws).system_prompt()
    assert "## Long-Term Memory (You)\n\n- prefers tabs" in text
    assert "## Project Memory\n\n- deploys with make ship" in text


def test_root_agents_md_wins_over_workspace_copy(ws: Workspace) -> None:
    touch(ws.work_root / "AGENTS.md", "Root rules: run make test.")
    text = builder(ws).system_prompt()
    assert "Root rules: run make test." in text


def test_global_user_profile_reads_global_user_md(ws: Workspace) -> None:
    touch(ws.global_workspace / "USER.md", "Name: Mei (global)")
    touch(ws.project_dir / "USER.md", "Name: project user")
    assert "Mei (global)" in builder(ws, context=_ctx(global_user_profile=True)).system_prompt()
    assert "project user" in builder(ws).system_prompt()


def _ctx(**kwargs):
    from catbuddy.config import ContextSettings

    return ContextSettings(**kwargs)


def test_always_on_skills_have_bodies_and_others_one_line(ws: Workspace) -> None:
    add_skill(ws.project_skills_dir, "deploy", body="SECRET-DEPLOY-STEPS")
    text = builder(ws).system_prompt()
    assert "### memory" in text and "### my" in text
    assert "- deploy: deploy helper" in text
    assert "SECRET-DEPLOY-STEPS" not in text
    assert "- drawio:" in text and "- github:" in text


def test_identity_renders_per_channel(ws: Workspace) -> None:
    b = builder(ws)
    tui, headless = b.system_prompt("tui"), b.system_prompt("headless")
    assert "terminal app" in tui and "headless" not in tui.split("---")[0]
    assert "running headless" in headless
    assert str(ws.work_root) in tui


def test_runtime_layer_lists_registered_sources(ws: Workspace) -> None:
    source = FakeMcp()
    b = builder(ws)
    b.add_runtime_source(source)
    assert "Runtime Context" not in b.system_prompt()
    source.lines = ["- MCP server git: mcp__git__git_status"]
    assert "- MCP server git: mcp__git__git_status" in b.system_prompt()


def test_runtime_block_goes_to_the_user_message_not_the_system_prompt(ws: Workspace) -> None:
    b = builder(ws)
    message = b.user_message("fix the bug", "tui")
    assert message == {
        "role": "user",
        "content": "fix the bug\n\n[runtime: time=2026-12-02T10:30:00+00:00, channel=tui]",
    }
    assert "2026-12-02" not in b.system_prompt()
    assert strip_runtime_block(message["content"]) == "fix the bug"


def test_system_prompt_is_byte_identical_across_turns(ws: Workspace) -> None:
    b = builder(ws)
    first = b.system_prompt()
    later = ContextBuilder(ws, Settings(), clock=lambda: datetime(2030, 1, 1, tzinfo=UTC))
    assert first == b.system_prompt() == later.system_prompt()


def test_cache_hit_reads_no_files(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    b = builder(ws)
    b.system_prompt()
    reads = 0
    real_read_text, real_open, real_io_open = pathlib.Path.read_text, builtins.open, io.open

    def counting(real):
        def wrapper(*args, **kwargs):
            nonlocal reads
            reads += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(pathlib.Path, "read_text", counting(real_read_text))
    monkeypatch.setattr(builtins, "open", counting(real_open))
    monkeypatch.setattr(io, "open", counting(real_io_open))
    for _ in range(5):
        b.system_prompt()
    assert reads == 0
    assert b.hits == 5


@pytest.mark.parametrize("name", ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md"])
def test_editing_a_bootstrap_file_changes_the_next_prompt(ws: Workspace, name: str) -> None:
    b = builder(ws)
    before = b.system_prompt()
    touch(ws.project_dir / name, f"EDITED {name}")
    after = b.system_prompt()
    assert after != before and f"EDITED {name}" in after


@pytest.mark.parametrize("which", ["global", "project"])
def test_editing_a_memory_changes_the_next_prompt(ws: Workspace, which: str) -> None:
    b = builder(ws)
    b.system_prompt()
    path = ws.global_memory if which == "global" else ws.project_memory
    touch(path, f"- remembered in {which}")
    assert f"- remembered in {which}" in b.system_prompt()


def test_editing_a_skill_changes_the_next_prompt(ws: Workspace) -> None:
    path = add_skill(ws.project_skills_dir, "deploy")
    b = builder(ws)
    assert "- deploy: deploy helper" in b.system_prompt()
    touch(path, "---\nname: deploy\ndescription: ships the app to prod\n---\nbody\n")
    assert "- deploy: ships the app to prod" in b.system_prompt()


def test_adding_a_skill_directory_changes_the_next_prompt(ws: Workspace) -> None:
    b = builder(ws)
    assert "- changelog-writer:" not in b.system_prompt()
    add_skill(ws.global_skills_dir, "changelog-writer")
    stamp = time.time_ns() + 20_000_000
    os.utime(ws.global_skills_dir, ns=(stamp, stamp))
    assert "- changelog-writer: changelog-writer helper" in b.system_prompt()


def test_editing_the_config_is_part_of_the_fingerprint(ws: Workspace) -> None:
    b = builder(ws)
    first = b.fingerprint()
    touch(ws.project_dir / "config.toml", 'model = "gpt-4o"\n')
    assert b.fingerprint() != first


def test_layers_report_their_sources(ws: Workspace) -> None:
    prompt = builder(ws).build()
    bootstrap = prompt.layer("bootstrap")
    assert bootstrap is not None
    assert ws.project_dir / "SOUL.md" in bootstrap.sources
    assert [layer.name for layer in prompt.layers] == ["identity", "bootstrap", "memory", "skills", "runtime"]
