"""The model may maintain its own global memory files outside the work root; the global config and the
rest of the home it may write only with the user's approval of that call (see test_guard_protected)."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.paths import resolve_path
from catbuddy.workspace import Workspace


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = Workspace(work_root=tmp_path / "proj", home=tmp_path / "home")
    workspace.work_root.mkdir()
    workspace.ensure_home()
    return ToolContext(workspace, Settings())


def test_global_memory_is_writable(ctx: ToolContext) -> None:
    path = resolve_path(ctx, str(ctx.workspace.global_memory), for_write=True)
    assert path == ctx.workspace.global_memory.resolve()


def test_tilde_catbuddy_means_the_configured_home(ctx: ToolContext) -> None:
    path = resolve_path(ctx, "~/.catbuddy/workspace/USER.md", for_write=True)
    assert path == (ctx.workspace.global_workspace / "USER.md").resolve()


def test_global_config_is_reachable_but_needs_a_grant_to_write(ctx: ToolContext) -> None:
    target = (ctx.workspace.home / "config.toml").resolve()
    assert resolve_path(ctx, "~/.catbuddy/config.toml", for_write=False) == target
    with pytest.raises(ToolError, match="Only the user can approve"):
        resolve_path(ctx, "~/.catbuddy/config.toml", for_write=True)
    ctx.grants.allow(target)
    assert resolve_path(ctx, "~/.catbuddy/config.toml", for_write=True) == target


def test_session_files_stay_protected(ctx: ToolContext) -> None:
    with pytest.raises(ToolError):
        resolve_path(ctx, "~/.catbuddy/projects/x/sessions/a.jsonl", for_write=True)


def test_other_places_in_the_home_are_outside(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="outside the work root"):
        resolve_path(ctx, "~/.catbuddy/calibration.json", for_write=True)
