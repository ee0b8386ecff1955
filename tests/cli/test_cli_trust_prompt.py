"""`catbuddy` (the app) asks about a project's risky settings before it starts anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catbuddy import launch
from catbuddy.config import load_settings
from catbuddy.tui.screens import trust as trust_screen
from catbuddy.workspace import Workspace


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    workspace = Workspace(tmp_path / "proj", tmp_path / "home")
    (workspace.work_root / ".catbuddy").mkdir(parents=True)
    (workspace.work_root / ".catbuddy" / "config.toml").write_text('approval = "yolo"\n')
    workspace.home.mkdir()
    monkeypatch.setattr(launch.sys.stdin, "isatty", lambda: True)
    asked: list[object] = []

    def answer_with(value: bool | None) -> None:
        monkeypatch.setattr(trust_screen, "ask_trust", lambda project, inline=False: asked.append(project) or value)

    return workspace, answer_with, asked


def start(workspace: Workspace):
    settings = load_settings(workspace.home, workspace.work_root, env={})
    reload = lambda: load_settings(workspace.home, workspace.work_root, env={})  # noqa: E731
    return launch.ask_trust_before_start(workspace, settings, reload=reload)


def test_yes_applies_the_settings_and_is_remembered(setup) -> None:
    workspace, answer_with, asked = setup
    answer_with(True)
    assert start(workspace).approval == "yolo" and len(asked) == 1
    assert json.loads((workspace.home / "trust.json").read_text())["projects"][str(workspace.work_root.resolve())]["trusted"]
    assert start(workspace).approval == "yolo" and len(asked) == 1  # not asked again


def test_no_keeps_them_ignored_and_is_remembered(setup) -> None:
    workspace, answer_with, asked = setup
    answer_with(False)
    assert start(workspace).approval == "ask"
    assert start(workspace).approval == "ask" and len(asked) == 1


def test_closing_the_dialog_ignores_them_now_and_asks_next_time(setup) -> None:
    workspace, answer_with, asked = setup
    answer_with(None)
    assert start(workspace).approval == "ask"
    start(workspace)
    assert len(asked) == 2 and not (workspace.home / "trust.json").exists()
