from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.files import ReadFileTool, WriteFileTool
from catbuddy.tools.paths import resolve_path
from catbuddy.tools.registry import run_tool


def test_relative_paths_resolve_inside_the_work_root(ctx: ToolContext, root: Path) -> None:
    assert resolve_path(ctx, "src/a.py", for_write=False) == root / "src/a.py"


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "~/x.txt"])
def test_paths_leaving_the_work_root_are_refused(ctx: ToolContext, path: str) -> None:
    with pytest.raises(ToolError, match="outside the work root"):
        resolve_path(ctx, path, for_write=False)


def test_tilde_is_expanded_before_the_check(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ctx.work_root))
    assert resolve_path(ctx, "~/notes.md", for_write=False) == ctx.work_root / "notes.md"


def test_symlink_pointing_outside_is_refused(ctx: ToolContext, root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    (root / "link.txt").symlink_to(secret)
    (root / "linkdir").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="outside"):
        resolve_path(ctx, "link.txt", for_write=False)
    with pytest.raises(ToolError, match="outside"):
        resolve_path(ctx, "linkdir/secret.txt", for_write=True)


def test_symlink_inside_the_root_is_followed(ctx: ToolContext, root: Path) -> None:
    (root / "real.txt").write_text("r")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert resolve_path(ctx, "alias.txt", for_write=True) == root / "real.txt"


def test_outside_paths_allowed_when_configured(make_ctx: Callable[..., ToolContext], tmp_path: Path) -> None:
    ctx = make_ctx(allow_outside_work_root=True)
    assert (
        resolve_path(ctx, str(tmp_path / "elsewhere.txt"), for_write=True)
        == (tmp_path / "elsewhere.txt").resolve()
    )


def test_session_files_are_never_writable_even_when_outside_is_allowed(
    make_ctx: Callable[..., ToolContext], tmp_path: Path
) -> None:
    ctx = make_ctx(allow_outside_work_root=True)
    target = ctx.workspace.home / "projects" / "p" / "sessions" / "s.jsonl"
    assert resolve_path(ctx, str(target), for_write=False) == target  # reading is fine
    with pytest.raises(ToolError, match="session files"):
        resolve_path(ctx, str(target), for_write=True)


def test_session_files_inside_the_work_root_are_never_writable(
    make_ctx: Callable[..., ToolContext], tmp_path: Path
) -> None:
    ctx = make_ctx()
    home_inside = ctx.work_root / ".home"
    ctx = type(ctx)(
        workspace=type(ctx.workspace)(work_root=ctx.work_root, home=home_inside), settings=ctx.settings
    )
    with pytest.raises(ToolError, match="session files"):
        resolve_path(ctx, ".home/projects/x.jsonl", for_write=True)


async def test_file_tools_return_escape_errors_as_results(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("no")
    result = await run_tool(ReadFileTool(), {"path": "../outside.txt"}, ctx)
    assert result.is_error and "outside the work root" in result.content
    result = await run_tool(WriteFileTool(), {"path": os.path.join("..", "new.txt"), "content": "x"}, ctx)
    assert result.is_error and not (tmp_path / "new.txt").exists()
