"""The tool is the one owner of what it is (docs/architecture.md §8): the model reads the description
files byte for byte as before, and nothing in catbuddy/ names a tool but the tool itself, the registry's
order and the reader of older sessions."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

import catbuddy
from catbuddy.agent.toolset import build_registry
from catbuddy.config import McpServerSettings
from catbuddy.mcp.tool import make_mcp_tool
from catbuddy.resources import templates_dir
from catbuddy.tool_meta import FactKind, ToolMeta, ToolStatus
from catbuddy.tools.base import DESCRIPTIONS_DIR, PreviewKind, Tool, ToolKind
from catbuddy.tools.registry import BUILTIN_ORDER

PACKAGE = Path(catbuddy.__file__).parent
GOLDEN = Path(__file__).parent / "builtin_tool_schemas.json"
# Where a built-in's name may be written besides its own module: the order the schemas are offered in,
# and the reader of sessions stored before results carried their outcome (their tools, by old names).
NAMING_MODULES = {"catbuddy.tools.registry", "catbuddy.context.compaction.ledger_legacy"}
# The same word meaning something else.
OTHER_MEANINGS = {
    ("kinds.py", "exec"): "ToolKind.EXEC, a kind of tool",
    ("tool_meta.py", "skill"): "FactKind.SKILL, a kind of ledger fact",
    ("shell_programs.py", "exec"): "bash's `exec` builtin",
    ("readonly_rules.py", "grep"): "the grep program, a read-only command",
    ("readonly_git.py", "grep"): "`git grep`, a read-only git subcommand",
}


def test_the_schemas_the_model_reads_are_byte_for_byte_those_before_descriptions_moved_to_files() -> None:
    # The schemas open every request's cached prefix: a changed byte costs every user a cache miss.
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    schemas = build_registry().schemas()
    assert json.dumps(schemas, ensure_ascii=False) == json.dumps(golden, ensure_ascii=False)


def test_every_built_in_reads_its_own_description_file_and_no_file_is_left_over() -> None:
    files = {p.stem for p in (templates_dir() / DESCRIPTIONS_DIR).glob("*.md")}
    assert files == set(BUILTIN_ORDER)
    for tool in build_registry():
        text = (templates_dir() / DESCRIPTIONS_DIR / f"{tool.name}.md").read_text(encoding="utf-8")
        assert tool.schema()["function"]["description"] == text.removesuffix("\n")


def test_no_module_names_a_built_in_tool_but_its_own() -> None:
    owners = {tool.name: type(tool).__module__ for tool in build_registry()}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if module.startswith("catbuddy.testing") or module in NAMING_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant) or node.value not in owners:
                continue
            if owners[node.value] != module and (path.name, node.value) not in OTHER_MEANINGS:
                found.append(f"{module}:{node.lineno} names {node.value!r}")
    assert found == []


def test_microcompaction_takes_the_tools_that_declare_it() -> None:
    registry = build_registry()
    declared = {tool.name for tool in registry if tool.microcompactable}
    assert registry.microcompactable() == declared
    # Bulky output rarely needed verbatim; never a skill body, an edit's diff or a remote tool's answer.
    assert {"read_file", "exec", "grep", "list_dir", "web_fetch", "web_search", "recall"} <= declared
    assert not declared & {"skill", "write_file", "edit_file"}


class Caller:
    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "ok"}]}


def test_an_mcp_tool_gets_the_contracts_defaults() -> None:
    settings = McpServerSettings(name="git", command="git-mcp", approval="ask")
    tool = make_mcp_tool(Caller(), settings, {"name": "git_log", "description": "Show the log"})
    meta = ToolMeta(ToolStatus.OK)

    assert tool.kind is ToolKind.EXTERNAL and not tool.microcompactable and tool.approval_override == "ask"
    assert tool.schema()["function"]["description"] == "Show the log"
    assert tool.preview({"path": "a.py"}, None).text == ""  # type: ignore[arg-type]
    assert tool.writes({}, None) is None  # type: ignore[arg-type]  # a remote tool may write anything
    assert [(f.kind, f.value) for f in tool.ledger_facts({}, meta)] == [(FactKind.EXTERNAL, tool.name)]


@pytest.mark.parametrize(
    ("name", "args", "kind", "writes"),
    [
        ("exec", {"command": "git status"}, PreviewKind.COMMAND, None),
        ("write_file", {"path": "a.txt", "content": "new\n"}, PreviewKind.DIFF, ["a.txt"]),
        (
            "edit_file",
            {"path": "a.txt", "old_string": "old", "new_string": "new"},
            PreviewKind.DIFF,
            ["a.txt"],
        ),
        ("read_file", {"path": "a.txt"}, PreviewKind.TEXT, []),
    ],
)
def test_each_tool_draws_its_own_approval_preview_and_says_what_it_writes(
    ctx, name: str, args: dict[str, Any], kind: PreviewKind, writes: list[str] | None
) -> None:
    (ctx.work_root / "a.txt").write_text("old\n")
    tool: Tool | None = build_registry().get(name)
    assert tool is not None
    preview = tool.preview(args, ctx)
    written = tool.writes(args, ctx)

    assert preview.kind is kind
    if kind is PreviewKind.DIFF:
        assert "-old" in preview.text and "+new" in preview.text
    if kind is PreviewKind.COMMAND:
        assert preview.text == "git status"
    assert written == (None if writes is None else [(ctx.work_root / p).resolve() for p in writes])
