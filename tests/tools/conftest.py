"""A tool context on real folders: the work root is tmp_path/"proj", the catbuddy home tmp_path/"home"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from catbuddy.config import Settings, ToolSettings
from catbuddy.tools.base import ToolContext
from catbuddy.workspace import Workspace


def build_ctx(tmp_path: Path, **tool_settings: Any) -> ToolContext:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True, exist_ok=True)
    settings = replace(Settings(), tools=ToolSettings(**tool_settings))
    return ToolContext(workspace=Workspace(work_root=root.resolve(), home=home.resolve()), settings=settings)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return build_ctx(tmp_path)


@pytest.fixture
def root(ctx: ToolContext) -> Path:
    return ctx.work_root


@pytest.fixture
def make_ctx(tmp_path: Path) -> Callable[..., ToolContext]:
    """A context with some tool settings changed, e.g. ``make_ctx(allow_private_network=True)``."""
    return lambda **tool_settings: build_ctx(tmp_path, **tool_settings)
