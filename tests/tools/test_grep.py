from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from catbuddy.tools.base import ToolContext
from catbuddy.tools.grep import GREP_MAX_MATCHES, GrepTool, find_rg
from catbuddy.tools.registry import run_tool

needs_rg = pytest.mark.skipif(find_rg() is None, reason="ripgrep not installed")
ENGINES = [pytest.param(True, marks=needs_rg, id="rg"), pytest.param(False, id="python")]


@pytest.fixture
def tree(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return TODO_fix\n")
    (root / "src" / "pkg" / "util.py").write_text("# todo_fix later\nVALUE = 1\n")
    (root / "notes.md").write_text("TODO_fix the docs\n")
    (root / ".github").mkdir()
    (root / ".github" / "ci.yml").write_text("run: TODO_fix\n")
    for ignored in ("node_modules/lib", ".venv/lib", ".git", "build"):
        (root / ignored).mkdir(parents=True)
        (root / ignored / "x.py").write_text("TODO_fix\n")
    (root / "blob.bin").write_bytes(b"TODO_fix\x00\x01")
    return root


async def grep(ctx: ToolContext, use_rg: bool, **args: object) -> str:
    return (await GrepTool(use_rg=use_rg).run(dict(args), ctx)).content


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_prints_path_line_text_and_skips_ignored(
    ctx: ToolContext, tree: Path, use_rg: bool
) -> None:
    out = await grep(ctx, use_rg, pattern="TODO_fix")
    assert out.splitlines() == [
        ".github/ci.yml:1:run: TODO_fix",
        "notes.md:1:TODO_fix the docs",
        "src/app.py:4:    return TODO_fix",
    ]


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_ignore_case_glob_and_path(ctx: ToolContext, tree: Path, use_rg: bool) -> None:
    out = await grep(ctx, use_rg, pattern="todo_fix", ignore_case=True, glob="*.py", path="src")
    assert out.splitlines() == ["src/app.py:4:    return TODO_fix", "src/pkg/util.py:1:# todo_fix later"]


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_context_lines(ctx: ToolContext, tree: Path, use_rg: bool) -> None:
    out = await grep(ctx, use_rg, pattern="VALUE|main", context=1)
    assert out.splitlines() == [
        "src/app.py-2-",
        "src/app.py:3:def main():",
        "src/app.py-4-    return TODO_fix",
        "--",
        "src/pkg/util.py-1-# todo_fix later",
        "src/pkg/util.py:2:VALUE = 1",
    ]


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_respects_gitignore_in_a_repository(ctx: ToolContext, tree: Path, use_rg: bool) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    (tree / ".gitignore").write_text("notes.md\n")
    out = await grep(ctx, use_rg, pattern="TODO_fix")
    assert "notes.md" not in out and "src/app.py:4:" in out


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_caps_matches(ctx: ToolContext, root: Path, use_rg: bool) -> None:
    (root / "many.txt").write_text("hit\n" * (GREP_MAX_MATCHES + 50))
    out = await grep(ctx, use_rg, pattern="hit")
    assert out.count("many.txt:") == GREP_MAX_MATCHES and "there are more" in out


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_cuts_long_lines(ctx: ToolContext, root: Path, use_rg: bool) -> None:
    (root / "min.js").write_text("needle" + "z" * 5000 + "\n")
    out = await grep(ctx, use_rg, pattern="needle")
    assert len(out) < 700 and "line cut" in out


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_no_match_and_bad_regex(ctx: ToolContext, tree: Path, use_rg: bool) -> None:
    assert (await grep(ctx, use_rg, pattern="nothing_like_this")).startswith("No matches")
    result = await run_tool(GrepTool(use_rg=use_rg), {"pattern": "(unclosed"}, ctx)
    assert result.is_error and "Invalid search" in result.content


@needs_rg
async def test_rg_and_python_fallback_agree(ctx: ToolContext, tree: Path) -> None:
    assert (await GrepTool(use_rg=True).run({"pattern": "x"}, ctx)).meta["engine"] == "rg"
    for args in ({"pattern": r"\w+_fix"}, {"pattern": "o", "glob": "*.py"}, {"pattern": "=", "context": 2}):
        assert await grep(ctx, True, **args) == await grep(ctx, False, **args)


async def test_env_variable_forces_the_fallback(
    ctx: ToolContext, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CATBUDDY_NO_RG", "1")
    result = await GrepTool().run({"pattern": "VALUE"}, ctx)
    assert result.meta["engine"] == "python" and "src/pkg/util.py:2:VALUE = 1" in result.content


async def test_grep_outside_root_is_refused(ctx: ToolContext) -> None:
    result = await run_tool(GrepTool(), {"pattern": "x", "path": "/etc"}, ctx)
    assert result.is_error and "outside the work root" in result.content
