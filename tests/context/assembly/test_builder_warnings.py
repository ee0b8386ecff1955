"""A workspace file that cannot be read as UTF-8 text is left out of the prompt with a visible warning."""

from __future__ import annotations

import logging
import os
import time
from datetime import UTC, datetime

import pytest

from catbuddy.config import Settings
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.workspace import Workspace


@pytest.fixture
def ws(workspace: Workspace) -> Workspace:
    workspace.ensure_home()
    workspace.init_project()
    return workspace


def builder(ws: Workspace) -> ContextBuilder:
    return ContextBuilder(ws, Settings(), clock=lambda: datetime(2026, 12, 2, tzinfo=UTC))


@pytest.mark.parametrize("name", ["SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md"])
def test_a_bootstrap_file_that_is_not_utf8_is_skipped_with_a_warning(
    ws: Workspace, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = ws.project_dir / name
    path.write_bytes(b"# Rules\n\nBe caf\xe9 kind\n")
    with caplog.at_level(logging.INFO):
        built = builder(ws).build()
    assert f"## {name}" not in built.text
    (warning,) = built.warnings
    assert str(path) in warning and "not UTF-8 text (byte 0xe9 on line 3)" in warning
    assert "left out of the system prompt" in warning
    assert warning in caplog.text  # logged too (at info: the front ends show it to the user)


def test_a_memory_file_that_is_not_utf8_is_skipped_with_a_warning(ws: Workspace) -> None:
    ws.project_memory.write_bytes(b"- fact \xff\n")
    built = builder(ws).build()
    assert "## Project Memory" not in built.text
    assert any(str(ws.project_memory) in w for w in built.warnings)


def test_an_unreadable_workspace_file_is_skipped_with_a_warning(ws: Workspace) -> None:
    soul = ws.project_dir / "SOUL.md"
    soul.unlink()
    soul.mkdir()  # a folder where the file should be
    built = builder(ws).build()
    assert any(str(soul) in w and "is a directory" in w for w in built.warnings)
    assert "## SOUL.md" not in built.text


def test_the_warning_goes_away_once_the_file_is_fixed(ws: Workspace) -> None:
    path = ws.project_dir / "SOUL.md"
    path.write_bytes(b"caf\xe9\n")
    b = builder(ws)
    assert b.build().warnings
    path.write_text("café\n", encoding="utf-8")
    stamp = time.time_ns() + 10_000_000
    os.utime(path, ns=(stamp, stamp))
    built = b.build()
    assert built.warnings == [] and "café" in built.text


def test_missing_files_give_no_warning(ws: Workspace) -> None:
    for name in ("SOUL.md", "TOOLS.md", "USER.md", "AGENTS.md"):
        (ws.project_dir / name).unlink(missing_ok=True)
    assert builder(ws).build().warnings == []


async def test_the_loop_shows_a_skipped_workspace_file_once(ws: Workspace) -> None:
    from catbuddy.agent.events import Notice
    from catbuddy.agent.loop import AgentLoop

    (ws.project_dir / "SOUL.md").write_bytes(b"caf\xe9\n")
    loop = AgentLoop(ws, Settings())
    notices: list[Notice] = []
    loop.add_listener(lambda event: notices.append(event) if isinstance(event, Notice) else None)
    await loop.start()
    loop._emit_context_status()  # measured again, as after a turn: no second notice
    await loop.aclose()
    assert len([n for n in notices if "SOUL.md" in n.text]) == 1
