"""The TUI driving the real AgentLoop against the scripted OpenAI-compatible server."""

from __future__ import annotations

import tomllib

from helpers import texts, wait_for

from catbuddy.config import ContextSettings, Settings
from catbuddy.testing.script import Reply
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.screens.approval import ApprovalScreen
from catbuddy.tui.screens.editor import EditorScreen
from catbuddy.tui.screens.sessions import SessionPicker
from catbuddy.tui.screens.setup import SetupScreen
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock, UserBlock
from catbuddy.tui.widgets.prompt import QueuedView
from catbuddy.tui.widgets.reply import AssistantBlock

SIZE = (100, 32)


def real_app(workspace, llm, **kwargs) -> CatbuddyApp:
    settings = Settings(
        model="scripted", base_url=llm.base_url, api_key="test", max_retries=0, **kwargs.pop("settings", {})
    )
    kwargs.setdefault("approval_arm_delay", 0.0)
    return CatbuddyApp(workspace, settings, **kwargs)


async def send(app, pilot, text: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(text)
    app.query_one("#completer").display = False
    await pilot.press("enter")


def idle(app) -> bool:
    return app.loop is not None and app.status.info.state == "idle" and app.loop.state.value == "idle"


async def test_a_turn_streams_the_reply_and_updates_the_context_figures(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("Hello! Here is **bold** and\n\n```python\nprint('hi')\n```\n"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "hi there")
        await wait_for(pilot, lambda: texts(app, AssistantBlock), what="reply")
        await wait_for(pilot, lambda: idle(app), what="idle")
        assert texts(app, UserBlock) == ["hi there"]
        assert "print('hi')" in texts(app, AssistantBlock)[0]
        assert app.status.info.used > 0 and app.status.info.budget > 0
        assert app.status.info.session_id == app.loop.session_id
    assert scripted_llm.requests[0].messages[-1]["content"].startswith("hi there")


async def test_exec_approval_allow_once_runs_the_command(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.tool_call("exec", {"command": "echo approved-run | tee run.log"}), Reply.text("ran it"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "run echo")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        assert "echo approved-run" in screen.request.preview + screen.request.summary
        await pilot.press("1")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["ran it"], what="final reply")
        block = app.transcript.query_one(ToolBlock)
        assert block.status == "done" and "approved-run" in block.result
    tool_messages = [m for m in scripted_llm.requests[1].messages if m["role"] == "tool"]
    assert "approved-run" in tool_messages[0]["content"]


async def test_deny_with_a_note_reaches_the_model(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.tool_call("exec", {"command": "rm -r build"}), Reply.text("ok, not deleting"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "clean up")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("4")
        app.screen.query_one("#approval-note").value = "keep the build folder"
        await pilot.press("enter")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["ok, not deleting"])
        assert app.transcript.query_one(ToolBlock).status == "error"
    tool_messages = [m for m in scripted_llm.requests[1].messages if m["role"] == "tool"]
    assert "keep the build folder" in tool_messages[0]["content"]


async def test_edit_diff_is_shown_and_allow_for_session_skips_the_next_ask(workspace, scripted_llm) -> None:
    (workspace.work_root / "app.py").write_text("print('old')\n")
    edit = {"path": "app.py", "old_string": "print('old')", "new_string": "print('new')"}
    edit2 = {"path": "app.py", "old_string": "print('new')", "new_string": "print('newer')"}
    scripted_llm.push(
        Reply.tool_call("edit_file", edit), Reply.tool_call("edit_file", edit2), Reply.text("edited")
    )
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "edit app.py")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen) and app.screen)
        assert "-print('old')" in screen.request.preview and "+print('new')" in screen.request.preview
        await pilot.press("2")
        await wait_for(
            pilot, lambda: texts(app, AssistantBlock) == ["edited"], what="done without a second ask"
        )
    assert (workspace.work_root / "app.py").read_text() == "print('newer')\n"


async def test_esc_stops_during_streaming_and_the_session_stays_usable(workspace, scripted_llm) -> None:
    # Long enough (≈ 40 s) that Esc lands mid-stream however slowly a loaded machine runs the test.
    scripted_llm.push(Reply.text("word " * 4000, chunk_size=5, delay=0.01), Reply.text("second answer"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "talk a lot")
        await wait_for(pilot, lambda: texts(app, AssistantBlock), what="streaming started")
        await pilot.press("escape")
        await wait_for(pilot, lambda: any("stopped" in t for t in texts(app, NoticeBlock)), what="stopped")
        await wait_for(pilot, lambda: idle(app))
        assert len(texts(app, AssistantBlock)[0]) < len("word " * 4000)
        await send(app, pilot, "again")
        await wait_for(pilot, lambda: "second answer" in texts(app, AssistantBlock))


async def test_esc_stops_a_running_tool(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.tool_call("exec", {"command": "sleep 30"}))
    app = real_app(workspace, scripted_llm, settings={"approval": "yolo"})
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "wait")
        block = await wait_for(
            pilot,
            lambda: app.transcript.query(ToolBlock).first() if app.transcript.query(ToolBlock) else None,
        )
        await wait_for(pilot, lambda: app.running(), what="the turn running its tool")
        await pilot.press("escape")
        await wait_for(pilot, lambda: idle(app), what="stopped tool")
        assert block.status in ("stopped", "error")


async def test_input_typed_during_a_turn_is_queued_then_sent(workspace, scripted_llm) -> None:
    # Long enough (≈ 9 s) that the second message is sent while the first still streams, under load too.
    scripted_llm.push(Reply.text("slow " * 300, chunk_size=5, delay=0.03), Reply.text("queued answer"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "first")
        await wait_for(pilot, lambda: texts(app, AssistantBlock), what="streaming")
        await send(app, pilot, "second")
        await wait_for(pilot, lambda: app.query_one(QueuedView).display, what="queued shown")
        await wait_for(pilot, lambda: "queued answer" in texts(app, AssistantBlock), what="queued turn ran")
        assert texts(app, UserBlock) == ["first", "second"]
        assert not app.query_one(QueuedView).display


async def test_edit_soul_changes_the_next_request(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("noted"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "/edit SOUL.md")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.area(0).load_text("# Soul\nSpeak like a pirate, always.\n")
        await pilot.press("ctrl+s", "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EditorScreen))
        await send(app, pilot, "hello")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["noted"])
    system = scripted_llm.requests[0].messages[0]["content"]
    assert "Speak like a pirate, always." in system


async def test_connection_error_is_explained_and_the_session_stays_usable(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.error(500, "upstream exploded"), Reply.text("back again"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "first")
        await wait_for(pilot, lambda: [n for n in app.transcript.query(NoticeBlock) if n.level == "error"])
        await wait_for(pilot, lambda: idle(app))
        await send(app, pilot, "retry")
        await wait_for(pilot, lambda: "back again" in texts(app, AssistantBlock))


async def test_resume_picker_reopens_an_earlier_session(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("answer one"), Reply.text("answer two"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "the first session")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["answer one"])
        first_id = app.loop.session_id
        await send(app, pilot, "/new")
        await wait_for(pilot, lambda: app.loop.session_id != first_id and not texts(app, UserBlock))
        await send(app, pilot, "the second session")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["answer two"])
        await send(app, pilot, "/resume")
        picker = await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker) and app.screen)
        ids = [s.id for s in picker.sessions]
        assert first_id in ids
        picker.query_one("#sessions-list").highlighted = ids.index(first_id)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.session_id == first_id, what="resumed")
        await wait_for(pilot, lambda: texts(app, UserBlock) == ["the first session"])
        assert texts(app, AssistantBlock) == ["answer one"]


async def test_first_run_setup_tests_the_endpoint_writes_config_and_starts(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("configured!"))
    workspace.home.mkdir(parents=True)
    (workspace.home / "config.toml").write_text('approval = "auto-edit"\n')
    app = CatbuddyApp(workspace, Settings(api_key_env="CB_TEST_KEY"), approval_arm_delay=0.0)
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen)
        screen.query_one("#setup-endpoint").value = scripted_llm.base_url
        screen.query_one("#setup-model").value = "scripted"
        screen.query_one("#setup-key").value = "test"
        await pilot.click("#setup-test")
        await wait_for(pilot, lambda: "Connected" in str(screen.query_one("#setup-result").render()))
        await pilot.click("#setup-save")
        await wait_for(pilot, lambda: app.loop, what="loop after setup")
        await send(app, pilot, "hi")
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["configured!"])
    config = tomllib.loads((workspace.home / "config.toml").read_text())
    assert config == {
        "approval": "auto-edit",
        "base_url": scripted_llm.base_url,
        "model": "scripted",
        "api_key_env": "CB_TEST_KEY",
    }


async def test_compact_command_runs_a_real_compaction(workspace, scripted_llm) -> None:
    for index in range(3):
        scripted_llm.push(Reply.text(f"answer {index} " + "detail " * 40))
    scripted_llm.push(Reply.text("Summary: the user asked three questions."))
    app = real_app(workspace, scripted_llm, settings={"context": ContextSettings(compact_keep_recent=2)})
    async with app.run_test(size=SIZE) as pilot:
        for index in range(3):
            await send(app, pilot, f"question {index}")
            await wait_for(pilot, lambda i=index: len(texts(app, AssistantBlock)) == i + 1 and idle(app))
        await send(app, pilot, "/compact keep the questions")
        notice = await wait_for(
            pilot, lambda: [t for t in texts(app, NoticeBlock) if "compact" in t.lower() and "…" not in t]
        )
    assert "keep the questions" in str(scripted_llm.requests[-1].messages)
    assert "compacted" in notice[-1] and "saved" in notice[-1]


async def test_a_full_disk_during_a_turn_shows_what_happened_and_what_to_do(
    workspace, scripted_llm, full_disk_for_sessions
) -> None:
    scripted_llm.push(Reply.text("not saved"), Reply.text("saved this time"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        full_disk_for_sessions(0)
        await send(app, pilot, "hello")
        shown = await wait_for(
            pilot, lambda: [t for t in texts(app, NoticeBlock) if t.startswith("✗")], what="the error"
        )
        await wait_for(pilot, lambda: idle(app), what="idle")
        message, hint = shown[0].split("\n")
        assert message.startswith("✗ The session could not be saved") and "No space left on device" in message
        assert str(workspace.sessions_dir) in message
        assert hint.startswith("  → The disk holding") and "free some space" in hint
        assert not any("Unexpected" in t for t in texts(app, NoticeBlock))
        full_disk_for_sessions(1_000_000)  # space freed: the session goes on
        await send(app, pilot, "again")
        await wait_for(
            pilot, lambda: texts(app, AssistantBlock)[-1:] == ["saved this time"], what="next reply"
        )
