"""`catbuddy acp` driven by an ACP client (the same package) against a scripted model: a streamed answer,
a tool call with its permission request answered by the client, a cancel, a resumed session, reads and
writes through the editor, an unknown method, and a client that goes away mid-turn."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from acp import text_block
from acp_helpers import ENTRY, EditorClient

from catbuddy.testing.script import Reply

TIMEOUT = 60


async def test_a_turn_streams_the_answer_as_message_chunks(editor, project, scripted_llm):
    (project / ".catbuddy" / "commands").mkdir(parents=True)
    (project / ".catbuddy" / "commands" / "review.md").write_text(
        "---\nargument-hint: FILE\n---\nReview $1\n"
    )
    scripted_llm.push(Reply.text("Hello from the scripted model", chunk_size=5))
    client = EditorClient()
    async with editor(client) as (conn, session_id, _):
        response = await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("hi")]), TIMEOUT
        )

    assert response.stop_reason == "end_turn"
    chunks = client.of("agent_message_chunk")
    assert len(chunks) > 1 and client.message_text() == "Hello from the scripted model"
    assert scripted_llm.requests[0].messages[-1]["content"].startswith("hi")
    (commands,) = client.of("available_commands_update")
    advertised = {c.name: c for c in commands.available_commands}
    assert "compact" in advertised and advertised["review"].input.root.hint == "FILE"


async def test_a_tool_call_asks_the_client_and_runs_when_allowed(editor, project, scripted_llm):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": "note.txt", "content": "hello\n"}, id="call_w"),
        Reply.text("written"),
    )
    client = EditorClient(answer="allow_once")
    async with editor(client) as (conn, session_id, _):
        response = await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("write it")]), TIMEOUT
        )

    assert response.stop_reason == "end_turn"
    ((asked, options),) = client.permissions
    assert asked.tool_call_id == "call_w" and options == ["allow_once", "allow_session", "deny"]
    assert (project / "note.txt").read_text() == "hello\n"
    (started,) = client.of("tool_call")
    assert started.tool_call_id == "call_w" and started.kind == "edit"
    finished = [u for u in client.of("tool_call_update") if u.status == "completed"]
    diff = [c for c in finished[0].content if c.type == "diff"]
    assert diff and diff[0].new_text == "hello\n" and diff[0].old_text is None
    assert client.writes == {str(project / "note.txt"): "hello\n"}  # the editor's buffer follows
    assert client.message_text() == "written"


async def test_a_denied_permission_leaves_the_file_alone(editor, project, scripted_llm):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": "note.txt", "content": "x"}), Reply.text("ok, not written")
    )
    client = EditorClient(answer="deny")
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("write it")]), TIMEOUT)

    assert not (project / "note.txt").exists()
    assert [u.status for u in client.of("tool_call_update")] == ["failed"]
    tool_message = scripted_llm.requests[1].messages[-1]
    assert tool_message["role"] == "tool" and "denied" in tool_message["content"].lower()


async def test_cancel_stops_the_turn(editor, scripted_llm):
    scripted_llm.push(Reply.text("word " * 200, chunk_size=5, delay=0.05))
    client = EditorClient()
    async with editor(client) as (conn, session_id, _):
        first_chunk = asyncio.Event()
        client.on_update = lambda u: (
            first_chunk.set() if getattr(u, "session_update", "") == "agent_message_chunk" else None
        )
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("talk a lot")]))
        await asyncio.wait_for(first_chunk.wait(), TIMEOUT)
        await conn.cancel(session_id=session_id)
        response = await asyncio.wait_for(turn, TIMEOUT)

    assert response.stop_reason == "cancelled"
    assert len(client.message_text()) < len("word " * 200)


async def test_reads_go_through_the_editor_so_unsaved_buffers_are_seen(editor, project, scripted_llm):
    (project / "calc.py").write_text("def add(a, b): return a - b\n")  # on disk: the old text
    scripted_llm.push(Reply.tool_call("read_file", {"path": "calc.py"}), Reply.text("fixed in the buffer"))
    client = EditorClient(buffers={str(project / "calc.py"): "def add(a, b): return a + b\n"})
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("check calc.py")]), TIMEOUT
        )

    tool_message = scripted_llm.requests[1].messages[-1]
    assert "return a + b" in tool_message["content"] and "return a - b" not in tool_message["content"]


async def test_an_edit_applies_to_the_unsaved_buffer_and_keeps_the_users_unsaved_changes(
    editor, project, scripted_llm
):
    path = project / "calc.py"
    path.write_bytes(b"def add(a, b):\r\n    return a - b\r\n")  # on disk, CRLF
    unsaved = "# the user's unsaved note\ndef add(a, b):\n    return a - b\n"  # the editor's buffer
    edit = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
    scripted_llm.push(Reply.tool_call("edit_file", edit), Reply.text("fixed"))
    client = EditorClient(buffers={str(path): unsaved})
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("fix add")]), TIMEOUT)

    expected = "# the user's unsaved note\ndef add(a, b):\n    return a + b\n"
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode()  # the file's own line endings
    assert client.writes[str(path)].replace("\r\n", "\n") == expected


async def test_an_edit_of_text_only_the_buffer_has_lands(editor, project, scripted_llm):
    path = project / "calc.py"
    path.write_text("x = 1\n")
    edit = {"path": "calc.py", "old_string": "y = 2", "new_string": "y = 3"}
    scripted_llm.push(Reply.tool_call("edit_file", edit), Reply.text("done"))
    client = EditorClient(buffers={str(path): "x = 1\ny = 2\n"})
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("bump y")]), TIMEOUT)

    assert path.read_text() == "x = 1\ny = 3\n"
    assert not scripted_llm.requests[1].messages[-1]["content"].startswith("Error")


async def test_a_loaded_session_replays_and_continues(editor, scripted_llm):
    scripted_llm.push(Reply.text("first answer"), Reply.text("second answer"))
    async with editor(EditorClient()) as (conn, session_id, _):
        await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("first question")]), TIMEOUT
        )

    client = EditorClient()
    async with editor(client, load=session_id) as (conn, loaded_id, _):
        replayed = [u.content.text for u in client.of("user_message_chunk")]
        assert replayed == ["first question"]
        await asyncio.wait_for(
            conn.prompt(session_id=loaded_id, prompt=[text_block("second question")]), TIMEOUT
        )

    contents = [m["content"] for m in scripted_llm.requests[1].messages if m["role"] != "system"]
    assert contents[0].startswith("first question") and contents[1] == "first answer"


async def test_an_unknown_method_gets_a_json_rpc_error(project, acp_env):
    process = await asyncio.create_subprocess_exec(
        *ENTRY, cwd=project, env=acp_env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "session/teleport", "params": {}}).encode() + b"\n"
    )
    await process.stdin.drain()
    answer = json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT))
    process.stdin.close()
    code = await asyncio.wait_for(process.wait(), TIMEOUT)

    assert answer["id"] == 7 and answer["error"]["code"] == -32601
    assert code == 0  # still alive after the bad call, and closed cleanly at EOF


async def test_a_client_that_goes_away_mid_turn_leaves_the_session_resumable(
    editor, project, acp_env, scripted_llm
):
    scripted_llm.push(Reply.text("word " * 400, chunk_size=5, delay=0.05))
    client = EditorClient()
    first_chunk = asyncio.Event()
    client.on_update = lambda u: (
        first_chunk.set() if getattr(u, "session_update", "") == "agent_message_chunk" else None
    )
    async with editor(client) as (conn, session_id, process):
        turn = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=[text_block("talk")]))
        await asyncio.wait_for(first_chunk.wait(), TIMEOUT)
        process.stdin.close()  # the editor is gone
        code = await asyncio.wait_for(process.wait(), TIMEOUT)
        turn.cancel()
    assert code == 0

    scripted_llm.push(Reply.text("back again"))
    done = subprocess.run(
        [sys.executable, "-m", "catbuddy", "run", "--resume", session_id, "are you there?"],
        cwd=project, env={**acp_env, "CATBUDDY_APPROVAL": "yolo"}, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "back again" in done.stdout


@pytest.mark.parametrize("answer", [None])
async def test_a_dismissed_permission_request_denies(editor, project, scripted_llm, answer):
    scripted_llm.push(Reply.tool_call("write_file", {"path": "n.txt", "content": "x"}), Reply.text("fine"))
    client = EditorClient(answer=answer)
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("write")]), TIMEOUT)
    assert not (project / "n.txt").exists()


async def test_an_image_in_the_prompt_reaches_a_vision_model(editor, acp_env, scripted_llm):
    import base64

    from acp import image_block
    from image_helpers import png

    acp_env["CATBUDDY_MODEL"] = "gpt-4o"
    scripted_llm.push(Reply.text("a grey square"))
    client = EditorClient()
    blocks = [text_block("what is this?"), image_block(base64.b64encode(png()).decode(), "image/png")]
    async with editor(client) as (conn, session_id, _):
        response = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=blocks), TIMEOUT)

    assert response.stop_reason == "end_turn"
    text, image = scripted_llm.requests[0].messages[-1]["content"]
    assert text["text"].startswith("what is this?")
    assert image["image_url"]["url"].startswith("data:image/png;base64,")


async def test_an_editor_file_reference_becomes_a_mention(editor, project, scripted_llm):
    from acp import resource_link_block

    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    scripted_llm.push(Reply.text("it adds"))
    async with editor(EditorClient()) as (conn, session_id, _):
        link = resource_link_block("calc.py", f"file://{project / 'calc.py'}")
        await asyncio.wait_for(
            conn.prompt(session_id=session_id, prompt=[text_block("explain"), link]), TIMEOUT
        )

    content = scripted_llm.requests[0].messages[-1]["content"]
    assert "     2\t    return a + b" in content


async def test_the_approval_mode_is_the_session_mode(editor, project, scripted_llm):
    scripted_llm.push(Reply.tool_call("write_file", {"path": "m.txt", "content": "m"}), Reply.text("ok"))
    client = EditorClient(answer="deny")
    async with editor(client) as (conn, session_id, _):
        await conn.set_session_mode(session_id=session_id, mode_id="auto-edit")
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("write")]), TIMEOUT)

    assert client.permissions == []  # auto-edit: edits do not ask
    assert (project / "m.txt").read_text() == "m"
    assert [u.current_mode_id for u in client.of("current_mode_update")] == ["auto-edit"]


async def test_reasoning_streams_as_thought_chunks_apart_from_the_answer(editor, scripted_llm):
    scripted_llm.push(Reply.text("the answer", reasoning="let me think about it"))
    client = EditorClient()
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("why?")]), TIMEOUT)

    thoughts = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert thoughts.endswith("let me think about it")  # after any start-up warning (sandbox off here)
    assert client.message_text() == "the answer"


async def test_the_plan_reaches_the_editor_as_plan_updates(editor, scripted_llm):
    plan = {"plan": [{"step": "Read calc.py", "status": "done"}, {"step": "Fix add", "status": "in_progress"}]}
    scripted_llm.push(Reply.tool_call("update_plan", plan), Reply.text("planned"))
    client = EditorClient()
    async with editor(client) as (conn, session_id, _):
        await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("plan it")]), TIMEOUT)

    [update] = client.of("plan")
    assert [(e.content, e.status) for e in update.entries] == [
        ("Read calc.py", "completed"),
        ("Fix add", "in_progress"),
    ]
