"""Fixtures for TUI tests: a workspace in tmp_path, settings, and an app around the fake or real loop."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catbuddy.config import Settings
from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.workspace import Workspace

sys.path.insert(0, str(Path(__file__).parent))

from fake_loop import FakeLoop  # noqa: E402

SIZE = (100, 32)


@pytest.fixture(autouse=True)
def _quiet_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    return Workspace(work_root=root, home=tmp_path / "home")


@pytest.fixture
def settings() -> Settings:
    return Settings(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="test")


@pytest.fixture
def fake_app(workspace: Workspace, settings: Settings) -> Callable[..., Any]:
    """`fake_app()` -> (app, holder) where holder["loop"] is the FakeLoop once the app created it."""
    from catbuddy.tui.app import CatbuddyApp

    def make(**kwargs: Any) -> tuple[CatbuddyApp, dict[str, FakeLoop]]:
        holder: dict[str, FakeLoop] = {}
        prepare = kwargs.pop("setup", None)

        def factory(ws: Workspace, st: Settings, **kw: Any) -> FakeLoop:
            holder["loop"] = FakeLoop(ws, st, **kw)
            if prepare is not None:
                prepare(holder["loop"])
            return holder["loop"]

        kwargs.setdefault("approval_arm_delay", 0.0)
        app = CatbuddyApp(
            kwargs.pop("workspace", workspace),
            kwargs.pop("settings", settings),
            loop_factory=factory,
            **kwargs,
        )
        return app, holder

    return make
