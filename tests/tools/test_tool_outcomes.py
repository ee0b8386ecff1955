"""What each built-in reports about a call as data (docs/architecture.md §8): the status and exit code,
the files it changed with line counts, and the facts it leaves for the compaction ledger."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from catbuddy.config import SandboxSettings
from catbuddy.tool_meta import Change, FactKind, ToolMeta, ToolStatus
from catbuddy.tools.base import ToolContext
from catbuddy.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from catbuddy.tools.registry import run_tool
from catbuddy.tools.shell import ExecTool
from catbuddy.tools.skill import SkillTool
from catbuddy.tools.web import WebFetchTool, WebSearchTool


@pytest.fixture
def unsandboxed(ctx: ToolContext) -> ToolContext:
    return replace(ctx, settings=replace(ctx.settings, sandbox=SandboxSettings(mode="off")))


def changes(result) -> list[tuple[str, str, int | None, int | None, str]]:
    return [(p.path, p.change.value, p.added, p.removed, p.moved_to) for p in result.paths]


async def test_a_command_reports_its_exit_code_and_a_failing_one_its_tail(unsandboxed: ToolContext) -> None:
    passed = await run_tool(ExecTool(), {"command": "echo fine"}, unsandboxed)
    failed = await run_tool(ExecTool(), {"command": "echo one; echo two; exit 4"}, unsandboxed)

    assert (passed.outcome, passed.exit_code, "tail" in passed.meta) == (ToolStatus.OK, 0, False)
    assert (failed.outcome, failed.exit_code, failed.meta["tail"]) == (ToolStatus.ERROR, 4, "one\ntwo")
    assert not failed.is_error  # the model reads the output and the exit code; the call itself worked


async def test_a_command_that_times_out_reports_it(unsandboxed: ToolContext) -> None:
    result = await run_tool(ExecTool(), {"command": "sleep 5", "timeout": 0.2}, unsandboxed)
    assert (result.outcome, result.exit_code) == (ToolStatus.TIMED_OUT, None)


async def test_a_successful_rm_or_mv_reports_what_it_removed(unsandboxed: ToolContext, root: Path) -> None:
    (root / "a.txt").write_text("a")
    (root / "b.txt").write_text("b")
    result = await run_tool(ExecTool(), {"command": "rm a.txt && mv b.txt c.txt"}, unsandboxed)
    assert changes(result) == [
        ("a.txt", "deleted", None, None, ""),
        ("b.txt", "deleted", None, None, "c.txt"),
    ]


async def test_a_test_command_leaves_the_runners_verdict_for_the_ledger(unsandboxed: ToolContext) -> None:
    # A stand-in runner: the line pytest ends with, and the word `pytest` as a command would have it.
    command = "echo '== 3 passed, 1 failed in 0.2s =='; exit 1  # pytest"
    result = await run_tool(ExecTool(), {"command": command}, unsandboxed)
    meta = ToolMeta(result.outcome, exit_code=result.exit_code, extra=result.meta)

    facts = [(f.kind, f.detail) for f in ExecTool().ledger_facts({"command": "python -m pytest -q"}, meta)]

    assert facts[0][0] is FactKind.COMMAND and facts[1] == (FactKind.TEST, "3 passed, 1 failed in 0.2s")


def test_a_refused_command_is_still_a_command_but_not_a_test_run() -> None:
    facts = ExecTool().ledger_facts({"command": "pytest"}, ToolMeta(ToolStatus.REFUSED))
    assert [f.kind for f in facts] == [FactKind.COMMAND]


async def test_write_file_reports_a_created_an_unchanged_and_an_overwritten_file(ctx: ToolContext) -> None:
    created = await run_tool(WriteFileTool(), {"path": "n.txt", "content": "a\nb\n"}, ctx)
    same = await run_tool(WriteFileTool(), {"path": "n.txt", "content": "a\nb\n"}, ctx)
    changed = await run_tool(WriteFileTool(), {"path": "n.txt", "content": "a\nc\nd\n"}, ctx)

    assert changes(created) == [("n.txt", "created", 2, 0, "")]
    assert changes(same) == []
    assert changes(changed) == [("n.txt", "modified", 2, 1, "")]


async def test_edit_file_reports_the_lines_it_changed(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("x = 1\ny = 2\n")
    args = {"path": "m.py", "old_string": "y = 2", "new_string": "y = 3\nz = 4"}
    result = await run_tool(EditFileTool(), args, ctx)
    assert changes(result) == [("m.py", "modified", 2, 1, "")]
    assert result.paths[0].change is Change.MODIFIED


async def test_a_failed_edit_reports_no_change(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("x = 1\n")
    result = await run_tool(EditFileTool(), {"path": "m.py", "old_string": "nope", "new_string": "y"}, ctx)
    assert result.outcome is ToolStatus.ERROR and result.paths == []


@pytest.mark.parametrize(
    ("tool", "args", "status", "facts"),
    [
        (ReadFileTool(), {"path": "a.py"}, ToolStatus.OK, [(FactKind.READ, "a.py")]),
        (ReadFileTool(), {"path": "a.py"}, ToolStatus.ERROR, []),
        (
            WebFetchTool(),
            {"url": "https://example.com"},
            ToolStatus.ERROR,
            [(FactKind.URL, "https://example.com")],
        ),
        (WebSearchTool(), {"query": "textual pilot"}, ToolStatus.OK, [(FactKind.SEARCH, "textual pilot")]),
        (SkillTool(), {"name": "drawio", "file": "a.xml"}, ToolStatus.OK, [(FactKind.SKILL, "drawio/a.xml")]),
        (SkillTool(), {"name": "drawio"}, ToolStatus.ERROR, []),
    ],
)
def test_each_tool_leaves_its_own_facts(tool, args, status, facts) -> None:
    assert [(f.kind, f.value) for f in tool.ledger_facts(args, ToolMeta(status))] == facts


def test_the_finished_line_says_how_a_call_ended() -> None:
    read = ReadFileTool()
    assert read.result_summary({}, ToolMeta(ToolStatus.OK, extra={"lines": 120})) == "120 lines"
    assert read.result_summary({}, ToolMeta(ToolStatus.DENIED)) == "denied"
    assert ExecTool().result_summary({}, ToolMeta(ToolStatus.ERROR, exit_code=2)) == "exit 2"
    assert ExecTool().result_summary({}, ToolMeta(ToolStatus.TIMED_OUT)) == "timed out"
