"""Instruction files as other agents read them: AGENTS.md from the git root down to the work root (the
nearest last), CLAUDE.md where a folder has no AGENTS.md, each under a heading with its path; all of
them in the fingerprint; `.catbuddy/AGENTS.md` (or the shipped default) when there are none."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.instructions import git_root, instruction_files
from catbuddy.workspace import Workspace, shipped_default


def touch(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = time.time_ns() + 10_000_000
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    return root


def workspace_at(path: Path, home: Path) -> Workspace:
    path.mkdir(parents=True, exist_ok=True)
    return Workspace(work_root=path, home=home)


def bootstrap(workspace: Workspace) -> str:
    layer = ContextBuilder(workspace, Settings()).build().layer("bootstrap")
    assert layer is not None
    return layer.text


def test_agents_files_from_the_git_root_down_are_read_outermost_first(repo, isolated_home):
    touch(repo / "AGENTS.md", "root rules")
    touch(repo / "packages" / "AGENTS.md", "packages rules")
    touch(repo / "packages" / "api" / "AGENTS.md", "api rules")
    ws = workspace_at(repo / "packages" / "api", isolated_home)

    text = bootstrap(ws)

    headings = ["## AGENTS.md\n\nroot rules", "## packages/AGENTS.md\n\npackages rules",
                "## packages/api/AGENTS.md\n\napi rules"]
    assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings)
    assert text.index("api rules") < text.index("## SOUL.md")


def test_claude_md_is_read_where_a_folder_has_no_agents_md(repo, isolated_home):
    touch(repo / "CLAUDE.md", "claude at the root")
    touch(repo / "svc" / "AGENTS.md", "agents in svc")
    touch(repo / "svc" / "CLAUDE.md", "claude in svc, shadowed")
    ws = workspace_at(repo / "svc", isolated_home)

    text = bootstrap(ws)

    assert "## CLAUDE.md\n\nclaude at the root" in text
    assert "## svc/AGENTS.md\n\nagents in svc" in text and "shadowed" not in text


def test_folders_without_instructions_are_skipped(repo, isolated_home):
    touch(repo / "a" / "b" / "c" / "AGENTS.md", "deep rules")
    ws = workspace_at(repo / "a" / "b" / "c", isolated_home)

    assert [f.label for f in instruction_files(ws.work_root)] == ["a/b/c/AGENTS.md"]
    assert "## a/b/c/AGENTS.md\n\ndeep rules" in bootstrap(ws)


def test_nothing_above_the_git_root_is_read(tmp_path, isolated_home):
    touch(tmp_path / "AGENTS.md", "outside the repository")
    repo = (tmp_path / "repo").resolve()
    (repo / ".git").mkdir(parents=True)
    touch(repo / "AGENTS.md", "inside")
    ws = workspace_at(repo, isolated_home)

    text = bootstrap(ws)

    assert "inside" in text and "outside the repository" not in text


def test_a_git_file_as_in_a_worktree_marks_the_root(tmp_path, isolated_home):
    repo = (tmp_path / "wt").resolve()
    repo.mkdir()
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    touch(repo / "AGENTS.md", "worktree rules")
    ws = workspace_at(repo / "sub", isolated_home)

    assert git_root(ws.work_root) == repo
    assert "## AGENTS.md\n\nworktree rules" in bootstrap(ws)


def test_without_a_git_root_only_the_work_root_is_read(tmp_path, isolated_home):
    touch(tmp_path / "plain" / "AGENTS.md", "parent rules")
    ws = workspace_at(tmp_path / "plain" / "child", isolated_home)
    touch(ws.work_root / "CLAUDE.md", "child claude")

    text = bootstrap(ws)

    assert "## CLAUDE.md\n\nchild claude" in text and "parent rules" not in text


def test_with_no_instructions_anywhere_catbuddys_own_agents_md_is_read(repo, isolated_home):
    ws = workspace_at(repo / "x", isolated_home)
    touch(ws.project_dir / "AGENTS.md", "catbuddy's own instructions")

    assert "## AGENTS.md\n\ncatbuddy's own instructions" in bootstrap(ws)


def test_with_no_instructions_at_all_the_shipped_default_stands_in(repo, isolated_home):
    ws = workspace_at(repo, isolated_home)

    text = bootstrap(ws)
    assert "## AGENTS.md\n\n# Working in this project" in text  # the default, its comments stripped
    assert "Reporting back" in text and shipped_default("AGENTS.md").startswith("<!--")
    assert not ws.project_dir.exists()


def test_repository_instructions_win_over_catbuddys_own_copy(repo, isolated_home):
    ws = workspace_at(repo, isolated_home)
    touch(ws.project_dir / "AGENTS.md", "catbuddy's own")
    touch(repo / "AGENTS.md", "the repository's")

    text = bootstrap(ws)

    assert "the repository's" in text and "catbuddy's own" not in text


@pytest.mark.parametrize(
    ("change", "expected", "gone"),
    [
        ("add the outer AGENTS.md", "outer added", None),
        ("add a CLAUDE.md in the middle", "middle claude", None),
        ("edit the inner AGENTS.md", "inner edited", "inner first"),
        ("remove the inner AGENTS.md", "inner claude", "inner first"),
    ],
)
def test_the_fingerprint_covers_every_instruction_file(repo, isolated_home, change, expected, gone):
    ws = workspace_at(repo / "mid" / "inner", isolated_home)
    touch(ws.work_root / "AGENTS.md", "inner first")
    touch(ws.work_root / "CLAUDE.md", "inner claude")
    builder = ContextBuilder(ws, Settings())
    assert "inner first" in builder.system_prompt()

    if change == "add the outer AGENTS.md":
        touch(repo / "AGENTS.md", "outer added")
    elif change == "add a CLAUDE.md in the middle":
        touch(repo / "mid" / "CLAUDE.md", "middle claude")
    elif change == "edit the inner AGENTS.md":
        touch(ws.work_root / "AGENTS.md", "inner edited")
    else:
        (ws.work_root / "AGENTS.md").unlink()

    text = builder.system_prompt()
    assert expected in text
    if gone:
        assert gone not in text
    assert builder.misses == 2


def test_an_unchanged_tree_is_a_cache_hit(repo, isolated_home):
    touch(repo / "AGENTS.md", "rules")
    ws = workspace_at(repo / "a", isolated_home)
    builder = ContextBuilder(ws, Settings())

    builder.system_prompt()
    builder.system_prompt()

    assert (builder.hits, builder.misses) == (1, 1)


def test_a_workspace_file_appearing_later_is_noticed(repo, isolated_home):
    ws = workspace_at(repo, isolated_home)
    builder = ContextBuilder(ws, Settings())
    assert "cat-spirit coding companion" in builder.system_prompt()  # the shipped SOUL.md

    touch(ws.project_dir / "SOUL.md", "# Soul\nA terse robot.")

    text = builder.system_prompt()
    assert "A terse robot." in text and "cat-spirit coding companion" not in text


def test_the_report_has_a_line_per_file_with_its_tokens(repo, isolated_home):
    from catbuddy.cli_commands.context_view import build_view
    from catbuddy.context.counting.tokens import counter_for
    from catbuddy.context.governance.report import format_table

    touch(repo / "AGENTS.md", "root rules " * 20)
    touch(repo / "pkg" / "CLAUDE.md", "pkg rules")
    ws = workspace_at(repo / "pkg", isolated_home)

    view = build_view(ws, Settings(), connect_mcp=False)

    (bootstrap_layer,) = [layer for layer in view.report.layers if layer.name == "bootstrap"]
    labels = [part.label for part in bootstrap_layer.parts]
    assert labels == ["AGENTS.md", "pkg/CLAUDE.md", "SOUL.md", "USER.md", "TOOLS.md"]
    counter = counter_for(Settings().encoding_for())
    assert bootstrap_layer.parts[1].tokens == counter.count_text("## pkg/CLAUDE.md\n\npkg rules")
    assert [p.default for p in bootstrap_layer.parts] == [False, False, True, True, True]
    table = format_table(view.report)
    assert "  AGENTS.md" in table and "  pkg/CLAUDE.md" in table and "  SOUL.md (shipped default)" in table
    files = view.to_json()["layers"][1]["files"]
    assert files[0]["path"] == str(repo / "AGENTS.md") and files[0]["tokens"] > 20


def test_the_apps_context_table_shows_a_row_per_file(repo, isolated_home):
    import io

    from rich.console import Console

    from catbuddy.cli_commands.context_view import build_view
    from catbuddy.tui.screens.context import context_table

    touch(repo / "AGENTS.md", "root rules")
    touch(repo / "svc" / "AGENTS.md", "svc rules")
    ws = workspace_at(repo / "svc", isolated_home)
    report = build_view(ws, Settings(), connect_mcp=False).report
    out = io.StringIO()

    Console(file=out, width=120, color_system=None).print(context_table(report))

    rendered = out.getvalue()
    assert "system · bootstrap" in rendered
    assert "    AGENTS.md" in rendered and "    svc/AGENTS.md" in rendered
    assert "SOUL.md (shipped default)" in rendered
