"""edit_file against other agents' own edit tests (tests/tools/data/edit_peer_cases.json).

The cases come from sst/opencode's packages/opencode/test/tool/edit.test.ts (its replacer table and its
EditTool tests) and Aider-AI/aider's tests/basic/test_editblock.py; each names its source. A case agrees
when catbuddy applies what the peer applies (to exactly the expected content) and refuses what the peer
refuses. The cases where catbuddy refuses on purpose are marked ``"catbuddy": "refuses"`` with the
reason: opencode's block-anchor and context-aware replacers rewrite lines the model never quoted, aider
replaces the first of several matches, opencode lets an empty old_string overwrite a whole file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catbuddy.tools.base import ToolContext
from catbuddy.tools.files import EditFileTool
from catbuddy.tools.registry import run_tool

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "edit_peer_cases.json").read_text(encoding="utf-8")
)["cases"]
AGREEING = 67  # of 76; the other 9 are refused on purpose (see each case's note)


async def apply_case(case: dict[str, Any], ctx: ToolContext) -> tuple[bool, bytes | None, bytes | None]:
    """Run the case's edit on a real file: (applied, content before, content after)."""
    target = ctx.work_root / ("nested/dir/f.txt" if case["name"] == "creates nested directories" else "f.txt")
    if case["content"] == "<dir>":
        target.mkdir()
    elif case["content"] is not None:
        target.write_bytes(case["content"].encode("utf-8"))
    before = target.read_bytes() if target.is_file() else None
    args = {
        "path": str(target.relative_to(ctx.work_root)),
        "old_string": case["old_string"],
        "new_string": case["new_string"],
        "replace_all": case["replace_all"],
    }
    result = await run_tool(EditFileTool(), args, ctx)
    after = target.read_bytes() if target.is_file() else None
    return not result.is_error, before, after


@pytest.mark.parametrize("case", CASES, ids=[f"{n}-{c['name']}" for n, c in enumerate(CASES)])
async def test_peer_case(case: dict[str, Any], ctx: ToolContext) -> None:
    applied, before, after = await apply_case(case, ctx)
    if case.get("catbuddy") == "refuses" or case["peer"] == "refuses":
        assert not applied and after == before  # a refusal leaves the file as it was
    else:
        assert applied and after == case["expected"].encode("utf-8")


async def test_the_tally_is_what_the_data_says(ctx: ToolContext) -> None:
    agreeing = sum(1 for c in CASES if (c.get("catbuddy") or c["peer"]) == c["peer"])
    assert len(CASES) == 76 and agreeing == AGREEING
    assert all(c["note"] for c in CASES if c.get("catbuddy") == "refuses")
