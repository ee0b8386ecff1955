"""A tool catbuddy has never heard of — defined and registered here, named nowhere in catbuddy/ — gets
everything the built-ins get from its own declarations (docs/architecture.md §8): it is offered to the
model, asks with the preview it draws, stores a structured result, and the compaction ledger records
the file it changed and the error it met, with no "malformed: unknown tool" note."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compaction_helpers import Brain, seed

from catbuddy.agent.events import ApprovalRequested, ToolCallFinished
from catbuddy.config import ContextSettings
from catbuddy.context.compaction.ledger import render_ledger
from catbuddy.context.compaction.ledger_model import Ledger
from catbuddy.testing.script import Reply
from catbuddy.tool_meta import Change, PathChange, ToolStatus
from catbuddy.tools.base import Preview, Tool, ToolContext, ToolError, ToolKind, ToolResult
from catbuddy.tools.paths import display_path, resolve_path
from catbuddy.tools.preview import diff_preview, written_path
from catbuddy.tui.screens.approval import preview_renderable

NEVER = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0)


class AppendLineTool(Tool):
    name = "append_line"
    description = "Append one line to the end of a text file."
    parameters = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "line": {"type": "string"}},
        "required": ["path", "line"],
    }
    kind = ToolKind.EDIT

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        return diff_preview(args, ctx, lambda old: None if old is None else old + f"{args['line']}\n")

    def writes(self, args: Mapping[str, Any], ctx: ToolContext) -> list[Path] | None:
        return written_path(args, ctx)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args["path"], for_write=True)
        shown = display_path(ctx, path)
        if not path.is_file():
            raise ToolError(f"{shown} does not exist; append_line only appends to a file.")
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"{args['line']}\n")
        return ToolResult(f"Appended a line to {shown}.", paths=[PathChange(shown, Change.MODIFIED, 1, 0)])


def chat(*replies):
    """A Brain answering chat requests with ``replies`` in order (summary requests with a summary)."""
    queue = list(replies)
    return Brain(reply=lambda body: queue.pop(0) if queue else Reply.text("done"))


async def test_a_tool_registered_by_a_test_asks_with_its_preview_and_lands_in_the_ledger(
    workspace, scripted_llm_factory, make_loop
):
    notes = workspace.work_root / "notes.txt"
    notes.write_text("one\ntwo\n")
    brain = chat(
        Reply.tool_call("append_line", {"path": "notes.txt", "line": "three"}),
        Reply.tool_call("append_line", {"path": "missing.txt", "line": "x"}),
        Reply.text("Appended."),
    )
    llm = scripted_llm_factory([brain] * 20)
    loop, events = await make_loop(llm, approval="ask", context=NEVER)
    loop.registry.register(AppendLineTool())

    events.on = lambda e: isinstance(e, ApprovalRequested) and loop.answer_approval(e.call_id, "allow_once")
    await asyncio.wait_for(loop.run_turn("add a line"), 30)

    first = events.of(ApprovalRequested)[0]
    assert first.preview_kind == "diff" and "+three" in first.preview and " two" in first.preview
    assert preview_renderable(first).lexer.name == "Diff"  # type: ignore[union-attr]
    assert notes.read_text() == "one\ntwo\nthree\n"
    assert any(t["function"]["name"] == "append_line" for t in llm.requests[0].tools)
    done, failed = events.of(ToolCallFinished)
    assert done.meta["status"] == "ok" and done.meta["summary"] == "modified notes.txt +1"
    assert failed.meta["status"] == ToolStatus.ERROR.value

    seed(loop, 20)
    assert (await loop.compact()).ok
    ledger = Ledger.from_dict(loop.conversation.history.compaction_data["ledger"])
    change = ledger.changes["notes.txt"]
    assert (change.status, change.added, change.removed, change.edits) == ("modified", 1, 0, 1)
    assert [(e.tool, e.text) for e in ledger.errors] == [
        ("append_line", "Error: missing.txt does not exist; append_line only appends to a file.")
    ]
    assert ledger.malformed == []
    assert "modified `notes.txt`: +1 −0 lines" in render_ledger(ledger)


async def test_a_new_tool_that_only_reads_never_asks_and_keeps_the_default_contract(
    workspace, scripted_llm, make_loop
):
    class CountLinesTool(Tool):
        name = "count_lines"
        description = "Count the lines of a file."
        parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

        async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            path = resolve_path(ctx, args["path"], for_write=False)
            return ToolResult(str(len(path.read_text().splitlines())))

    (workspace.work_root / "a.txt").write_text("x\ny\n")
    scripted_llm.push(Reply.tool_call("count_lines", {"path": "a.txt"}), Reply.text("2 lines"))
    loop, events = await make_loop(scripted_llm, approval="ask")
    loop.registry.register(CountLinesTool())

    await loop.run_turn("count")

    assert not events.of(ApprovalRequested)
    [finished] = events.of(ToolCallFinished)
    assert finished.result == "2" and finished.meta == {"status": "ok", "duration": finished.meta["duration"]}
    assert "count_lines" not in loop.registry.microcompactable()
    assert CountLinesTool().writes({"path": "a.txt"}, loop.tool_context) == []
