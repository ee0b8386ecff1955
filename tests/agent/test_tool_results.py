"""Every tool result is stored with its structured outcome (``meta``: status, exit code, duration, paths
changed, ledger facts, the tool's one-line summary) beside the message, never inside it: the provider
never receives it (docs/architecture.md §5, §6)."""

from __future__ import annotations

import asyncio

from agent_helpers import wait_for_file

from catbuddy.agent.events import ApprovalRequested, ToolCallFinished
from catbuddy.session.records import read_session_file
from catbuddy.testing.script import Reply
from catbuddy.tool_meta import ToolMeta, ToolStatus


def stored(loop) -> list[tuple[dict, ToolMeta | None]]:
    """The tool messages on disk, each with the meta its record holds (None: the record has none)."""
    records = read_session_file(loop.session.path).messages
    return [
        (r.message, ToolMeta.from_json(r.meta) if r.meta is not None else None)
        for r in records
        if r.role == "tool"
    ]


def never_sent(llm) -> None:
    """No request carried anything but the OpenAI fields of a message."""
    for request in llm.requests:
        for message in request.messages:
            assert set(message) <= {"role", "content", "tool_calls", "tool_call_id", "name"}, message


async def test_an_edit_a_failing_and_a_passing_command_and_a_refusal_each_store_how_they_ended(
    workspace, scripted_llm, make_loop
):
    (workspace.work_root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    scripted_llm.push(
        Reply.tool_call(
            "edit_file", {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
        ),
        Reply.tool_call("exec", {"command": "echo 'FAILED test_add'; exit 1"}),
        Reply.tool_call("exec", {"command": "echo '1 passed'"}),
        Reply.tool_call("exec", {"command": "rm -rf ~"}),
        Reply.text("Fixed."),
    )
    loop, events = await make_loop(scripted_llm, approval="yolo", interactive=False, channel="headless")

    await loop.run_turn("fix calc.py")

    results = stored(loop)
    assert [meta is not None for _, meta in results] == [True] * 4
    (edit, edited), (failing, failed), (passing, passed), (refusal, refused) = results
    assert edited.status is ToolStatus.OK
    assert [(p.path, p.change.value, p.added, p.removed) for p in edited.paths] == [
        ("calc.py", "modified", 1, 1)
    ]
    assert (failed.status, failed.exit_code, failed.summary) == (ToolStatus.ERROR, 1, "exit 1")
    assert (passed.status, passed.exit_code) == (ToolStatus.OK, 0)
    assert (refused.status, refused.exit_code, refused.summary) == (ToolStatus.REFUSED, None, "refused")
    assert all(meta.duration is not None and meta.duration >= 0 for _, meta in results)
    # The message itself is the chat message as sent, the outcome is beside it.
    assert set(edit) == set(failing) == set(passing) == set(refusal) == {"role", "tool_call_id", "content"}
    never_sent(scripted_llm)
    # Front ends receive exactly what is stored.
    assert [ToolMeta.from_json(e.meta) for e in events.of(ToolCallFinished)] == [meta for _, meta in results]
    assert [e.is_error for e in events.of(ToolCallFinished)] == [False, True, False, True]


async def test_a_call_the_user_denies_is_stored_as_denied(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch x"}), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm, approval="ask")

    turn = asyncio.create_task(loop.run_turn("touch"))
    request = await events.wait_for(ApprovalRequested)
    loop.answer_approval(request.call_id, "deny")
    await turn

    [(_, meta)] = stored(loop)
    assert meta is not None and meta.status is ToolStatus.DENIED and meta.summary == "denied"
    assert request.preview == "touch x" and request.preview_kind == "command"


async def test_a_call_stopped_by_the_user_is_stored_as_stopped(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "echo yes > started; sleep 30"}), Reply.text("ok"))
    loop, _ = await make_loop(scripted_llm, approval="yolo")

    loop.submit("wait")
    await wait_for_file(workspace.work_root / "started")
    await loop.stop()

    [(_, meta)] = stored(loop)
    assert meta is not None and meta.status is ToolStatus.STOPPED and meta.exit_code is None


async def test_a_command_that_times_out_is_stored_as_timed_out(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("exec", {"command": "sleep 5", "timeout": 0.3}), Reply.text("slow"))
    loop, _ = await make_loop(scripted_llm, approval="yolo")

    await loop.run_turn("wait a bit")

    [(_, meta)] = stored(loop)
    assert meta is not None and meta.status is ToolStatus.TIMED_OUT and meta.summary == "timed out"


async def test_malformed_calls_are_errors_that_say_what_was_wrong(workspace, scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_calls(("frobnicate", {}), ("read_file", "{not json")),
        Reply.text("sorry"),
    )
    loop, _ = await make_loop(scripted_llm, approval="yolo")

    await loop.run_turn("go")

    metas = [meta for _, meta in stored(loop)]
    assert [(m.status, m.malformed) for m in metas if m is not None] == [
        (ToolStatus.ERROR, "unknown tool"),
        (ToolStatus.ERROR, "arguments that are not valid JSON"),
    ]


async def test_a_read_and_a_written_file_leave_their_facts_and_paths(workspace, scripted_llm, make_loop):
    (workspace.work_root / "notes.txt").write_text("one\ntwo\n")
    scripted_llm.push(
        Reply.tool_call("read_file", {"path": "notes.txt"}),
        Reply.tool_call("write_file", {"path": "new.txt", "content": "a\nb\nc\n"}),
        Reply.tool_call("write_file", {"path": "notes.txt", "content": "one\n2\n"}),
        Reply.text("done"),
    )
    loop, _ = await make_loop(scripted_llm, approval="yolo")

    await loop.run_turn("go")

    (_, read), (_, created), (_, overwritten) = stored(loop)
    assert read is not None and [(f.kind, f.value) for f in read.facts] == [("read", "notes.txt")]
    assert read.summary == "2 lines"
    assert created is not None and [p.describe() for p in created.paths] == ["created new.txt +3"]
    assert overwritten is not None and [p.describe() for p in overwritten.paths] == [
        "modified notes.txt +1 −1"
    ]
