"""Shared fixtures: every test gets its own catbuddy home and work root, never the user's."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.workspace import Workspace


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("catbuddy-home")
    monkeypatch.setenv("CATBUDDY_HOME", str(home))
    for var in (
        "CATBUDDY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "CATBUDDY_BASE_URL", "CATBUDDY_APPROVAL",
        "CATBUDDY_SANDBOX", "CATBUDDY_BWRAP",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path, isolated_home: Path) -> Workspace:
    root = tmp_path / "project"
    root.mkdir()
    return Workspace(work_root=root.resolve(), home=isolated_home)


@pytest.fixture
def settings() -> Settings:
    return Settings()
