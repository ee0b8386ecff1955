"""Known-safe commands and destructive forms in a real turn (the scripted server, the real exec tool)."""

from __future__ import annotations

import asyncio

from catbuddy.agent.events import ApprovalChoice, ApprovalRequested, ToolCallFinished, TurnEndReason
from catbuddy.config import ToolSettings
from catbuddy.testing.script import Reply


async def test_headless_auto_edit_runs_a_read_only_command_without_asking(workspace, scripted_llm, make_loop):
    (workspace.work_root / "notes.txt").write_text("one\ntwo\n")
    scripted_llm.push(Reply.tool_call("exec", {"command": "ls && wc -l notes.txt"}), Reply.text("two lines"))
    loop, events = await make_loop(scripted_llm, approval="auto-edit", interactive=False, channel="headless")

    outcome = await asyncio.wait_for(loop.run_turn("how many lines?"), 30)

    assert outcome.reason is TurnEndReason.DONE
    assert not events.of(ApprovalRequested)
    [finished] = events.of(ToolCallFinished)
    assert not finished.is_error and "2 notes.txt" in finished.result


async def test_headless_auto_edit_refuses_a_destructive_command_and_says_why(
    workspace, scripted_llm, make_loop
):
    (workspace.work_root / "build").mkdir()
    scripted_llm.push(Reply.tool_call("exec", {"command": "rm -r build"}), Reply.text("I left it."))
    loop, events = await make_loop(scripted_llm, approval="auto-edit", interactive=False, channel="headless")

    await asyncio.wait_for(loop.run_turn("clean the build"), 30)

    assert (workspace.work_root / "build").is_dir()
    [request] = events.of(ApprovalRequested)
    assert request.reason.startswith("destructive: `rm -r` deletes whole directory trees")
    refusal = scripted_llm.requests[1].messages[-1]["content"]
    assert refusal.startswith("Refused: `rm -r` deletes whole directory trees")


async def test_the_request_says_what_a_session_approval_remembers(workspace, scripted_llm, make_loop):
    (workspace.work_root / "notes.txt").write_text("one\n")
    scripted_llm.push(
        Reply.tool_call("exec", {"command": "wc -l notes.txt"}),
        Reply.tool_call("exec", {"command": "wc -c notes.txt"}),
        Reply.tool_call("exec", {"command": "sort -o sorted.txt notes.txt"}),
        Reply.text("done"),
    )
    ask_for_reads = ToolSettings(auto_allow_read_only=False)
    loop, events = await make_loop(scripted_llm, approval="ask", tools=ask_for_reads)
    asked: list[ApprovalRequested] = []

    def answer(event: object) -> None:
        if isinstance(event, ApprovalRequested):
            asked.append(event)
            loop.answer_approval(event.call_id, ApprovalChoice.ALLOW_SESSION)

    events.on = answer
    await loop.run_turn("count")

    assert [(a.preview, a.remembers) for a in asked] == [
        ("wc -l notes.txt", "wc, read-only forms"),
        (
            "sort -o sorted.txt notes.txt",
            "sort, forms that read or write files, not ones that run other programs",
        ),
    ]
    assert asked[1].reason == "writes in the work root: `sort -o` writes a file"
