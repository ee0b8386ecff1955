"""catbuddy's own files: the model writes them only with the user's approval of that one call.

The policy asks (never remembered, never automatic, in every mode); a yes becomes a one-use grant in the
tool context, which the file tool uses up; without it the tool refuses. Session files are never written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_helpers import make_policy

from catbuddy.tools.base import ToolContext
from catbuddy.tools.files import EditFileTool, WriteFileTool
from catbuddy.tools.registry import run_tool

MODES = ["ask", "auto-edit", "yolo"]


def protected_paths(ctx: ToolContext) -> list[str]:
    home = ctx.workspace.home
    return [
        ".catbuddy/config.toml",
        str(ctx.work_root / ".catbuddy" / "config.toml"),
        "./.catbuddy/../.catbuddy/config.toml",
        str(home / "config.toml"),
        "~/.catbuddy/config.toml",
        str(home / "calibration.json"),
        str(home / "trust.json"),
        str(home / "workspace" / "skills" / "x" / "SKILL.md"),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_writing_catbuddys_own_files_asks_every_time_in_every_mode(ctx: ToolContext, mode: str) -> None:
    policy = make_policy(ctx, mode)
    policy.remember("write_file")
    for path in protected_paths(ctx):
        decision = policy.decide(WriteFileTool(), {"path": path, "content": "x"})
        assert decision.action == "ask", (path, decision)
        assert decision.grant is not None and not decision.rememberable
        assert "catbuddy asks for every such write" in decision.reason
        assert decision.headless.startswith("Refused:")


@pytest.mark.parametrize("name", ["MEMORY.md", "USER.md", "SOUL.md", "TOOLS.md", "AGENTS.md"])
def test_the_memory_files_the_skills_edit_are_ordinary_writes(ctx: ToolContext, name: str) -> None:
    path = str(ctx.workspace.home / "workspace" / name)
    assert make_policy(ctx, "auto-edit").decide(WriteFileTool(), {"path": path, "content": "x"}).action == "allow"
    assert make_policy(ctx, "auto-edit").decide(WriteFileTool(), {"path": f".catbuddy/{name}"}).action == "allow"


def test_a_symlink_in_the_work_root_cannot_hide_a_protected_target(ctx: ToolContext) -> None:
    (ctx.work_root / ".catbuddy").mkdir()
    (ctx.work_root / ".catbuddy" / "config.toml").write_text("")
    (ctx.work_root / "innocent.toml").symlink_to(ctx.work_root / ".catbuddy" / "config.toml")
    decision = make_policy(ctx, "yolo").decide(WriteFileTool(), {"path": "innocent.toml", "content": "x"})
    assert decision.action == "ask" and decision.grant == (ctx.work_root / ".catbuddy" / "config.toml").resolve()


async def test_the_tool_refuses_without_the_grant_and_writes_nothing(ctx: ToolContext) -> None:
    config = ctx.work_root / ".catbuddy" / "config.toml"
    config.parent.mkdir()
    config.write_text('approval = "ask"\n')
    result = await run_tool(WriteFileTool(), {"path": ".catbuddy/config.toml", "content": 'approval = "yolo"\n'}, ctx)
    assert result.is_error and "Only the user can approve" in result.content
    assert config.read_text() == 'approval = "ask"\n'
    edit = await run_tool(
        EditFileTool(), {"path": ".catbuddy/config.toml", "old_string": "ask", "new_string": "yolo"}, ctx
    )
    assert edit.is_error and config.read_text() == 'approval = "ask"\n'


async def test_an_approved_call_writes_once_and_the_grant_is_used_up(ctx: ToolContext) -> None:
    config = ctx.work_root / ".catbuddy" / "config.toml"
    config.parent.mkdir()
    decision = make_policy(ctx, "ask").decide(WriteFileTool(), {"path": ".catbuddy/config.toml", "content": "a"})
    assert decision.grant is not None
    ctx.grants.allow(decision.grant)  # what the runner does when the user says yes
    first = await run_tool(WriteFileTool(), {"path": ".catbuddy/config.toml", "content": 'model = "x"\n'}, ctx)
    assert not first.is_error and config.read_text() == 'model = "x"\n'
    again = await run_tool(WriteFileTool(), {"path": ".catbuddy/config.toml", "content": "evil = 1\n"}, ctx)
    assert again.is_error and config.read_text() == 'model = "x"\n'


async def test_a_grant_is_for_its_own_path_only(ctx: ToolContext) -> None:
    home = ctx.workspace.home
    ctx.grants.allow((home / "config.toml").resolve())
    result = await run_tool(WriteFileTool(), {"path": str(home / "calibration.json"), "content": "{}"}, ctx)
    assert result.is_error and not (home / "calibration.json").exists()


@pytest.mark.parametrize("mode", MODES)
def test_session_files_are_refused_even_with_a_grant(ctx: ToolContext, mode: str, tmp_path: Path) -> None:
    target = ctx.workspace.home / "projects" / "p" / "sessions" / "s.jsonl"
    decision = make_policy(ctx, mode).decide(WriteFileTool(), {"path": str(target), "content": ""})
    assert decision.action == "deny"
