"""apply_patch: Codex's own scenario fixtures (tests/tools/data/codex_apply_patch_scenarios.json, from
openai/codex codex-rs/apply-patch/tests/fixtures/scenarios), Codex's seek_sequence unit cases, and what
catbuddy adds: all or nothing, the path guard, the hunk that does not fit named with the closest lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catbuddy.tools.apply_patch import ApplyPatchTool
from catbuddy.tools.apply_patch_format import PatchError, parse_patch, seek
from catbuddy.tools.base import PreviewKind, ToolContext
from catbuddy.tools.registry import run_tool

SCENARIOS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "codex_apply_patch_scenarios.json").read_text(encoding="utf-8")
)["scenarios"]


async def patch(ctx: ToolContext, text: str):
    return await run_tool(ApplyPatchTool(), {"patch": text}, ctx)


def tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
async def test_codex_scenario(scenario: dict[str, Any], ctx: ToolContext, root: Path) -> None:
    for name, content in scenario["input"].items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    before = tree(root)
    result = await patch(ctx, scenario["patch"])
    assert result.is_error == (scenario["codex"] == "rejects"), result.content
    if result.is_error:
        assert tree(root) == before  # nothing applied
    for name, content in scenario["expected"].items():
        if content is None:
            assert not (root / name).exists(), name
        else:
            assert (root / name).read_text() == content, name


# Codex's seek_sequence unit tests (codex-rs/apply-patch/src/seek_sequence.rs)
def test_seek_exact() -> None:
    assert seek(["foo", "bar", "baz"], ["bar", "baz"], 0, False) == 1


def test_seek_ignores_trailing_whitespace() -> None:
    assert seek(["foo   ", "bar\t\t"], ["foo", "bar"], 0, False) == 0


def test_seek_ignores_surrounding_whitespace() -> None:
    assert seek(["    foo   ", "   bar\t"], ["foo", "bar"], 0, False) == 0


def test_seek_pattern_longer_than_input() -> None:
    assert seek(["just one line"], ["too", "many", "lines"], 0, False) is None


def test_seek_reads_unicode_punctuation_as_ascii() -> None:
    assert seek(["x = \u201cquoted\u201d \u2014 done"], ['x = "quoted" - done'], 0, False) == 0


# Codex's parser unit tests (codex-rs/apply-patch/src/parser.rs test_parse_patch)
def test_parse_needs_the_markers() -> None:
    with pytest.raises(PatchError, match="first line"):
        parse_patch("bad")
    with pytest.raises(PatchError, match="last line"):
        parse_patch("*** Begin Patch\nbad")


def test_parse_all_three_operations_and_a_move() -> None:
    ops = parse_patch(
        "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n"
        "*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n"
        "+    return 123\n*** End Patch"
    )
    assert [(op.kind, op.path) for op in ops] == [
        ("add", "path/add.py"),
        ("delete", "path/delete.py"),
        ("update", "path/update.py"),
    ]
    assert ops[0].contents == "abc\ndef\n" and ops[2].move_to == "path/update2.py"
    chunk = ops[2].chunks[0]
    assert (chunk.context, chunk.old, chunk.new) == ("def f():", ["    pass"], ["    return 123"])


def test_parse_first_hunk_without_at_at_and_heredoc_wrapper() -> None:
    ops = parse_patch(
        "<<'EOF'\n*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch\nEOF\n"
    )
    assert ops[0].chunks[0].old == ["import foo"] and ops[0].chunks[0].new == ["import foo", "bar"]


# --- what catbuddy adds ---------------------------------------------------------------------------


async def test_a_hunk_that_does_not_fit_names_file_hunk_and_closest_lines(
    ctx: ToolContext, root: Path
) -> None:
    (root / "a.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await patch(
        ctx,
        "*** Begin Patch\n*** Update File: a.py\n@@\n-    return 1\n+    return 10\n@@\n-    return 3\n+    return 30\n*** End Patch",
    )
    assert result.is_error
    assert "Hunk 2 of the update of a.py" in result.content and "return 3" in result.content
    assert "closest match" in result.content and "5\t    return 2" in result.content
    assert (root / "a.py").read_text().count("return 1\n") == 1  # hunk 1 not applied either


async def test_all_or_nothing_across_files(ctx: ToolContext, root: Path) -> None:
    (root / "one.txt").write_text("a\n")
    result = await patch(
        ctx,
        "*** Begin Patch\n*** Update File: one.txt\n@@\n-a\n+b\n*** Delete File: missing.txt\n*** End Patch",
    )
    assert result.is_error and "missing.txt" in result.content
    assert (root / "one.txt").read_text() == "a\n"


async def test_a_path_outside_the_work_root_is_refused(ctx: ToolContext, root: Path) -> None:
    result = await patch(ctx, "*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch")
    assert result.is_error and "outside the work root" in result.content
    assert not (root.parent / "evil.txt").exists()


async def test_a_protected_file_is_refused(ctx: ToolContext, root: Path) -> None:
    result = await patch(ctx, "*** Begin Patch\n*** Add File: .catbuddy/config.toml\n+x = 1\n*** End Patch")
    assert result.is_error and "Refused" in result.content
    assert not (root / ".catbuddy" / "config.toml").exists()


async def test_crlf_files_stay_crlf(ctx: ToolContext, root: Path) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await patch(ctx, "*** Begin Patch\n*** Update File: w.txt\n@@\n-two\n+three\n*** End Patch")
    assert (root / "w.txt").read_bytes() == b"one\r\nthree\r\n"


async def test_result_paths_and_preview(ctx: ToolContext, root: Path) -> None:
    (root / "m.txt").write_text("x\n")
    text = "*** Begin Patch\n*** Update File: m.txt\n@@\n-x\n+y\n*** Add File: n.txt\n+new\n*** End Patch"
    preview = ApplyPatchTool().preview({"patch": text}, ctx)
    assert preview.kind is PreviewKind.DIFF and "+y" in preview.text and "+new" in preview.text
    assert ApplyPatchTool().writes({"patch": text}, ctx) == [root / "m.txt", root / "n.txt"]
    result = await patch(ctx, text)
    assert [(p.path, p.change.value) for p in result.paths] == [("m.txt", "modified"), ("n.txt", "created")]


async def test_codexs_input_argument_is_accepted_for_patch(ctx: ToolContext, root: Path) -> None:
    tool = ApplyPatchTool()
    args = tool.normalize_args({"input": "*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch"})
    result = await run_tool(tool, args, ctx)
    assert not result.is_error and (root / "n.txt").read_text() == "hi\n"
