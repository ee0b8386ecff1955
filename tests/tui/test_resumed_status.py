"""A resumed session shows each tool call as it ended live: the status is stored with the result
(docs/architecture.md §6), not guessed back from its text. Before, `--continue` showed a call refused by
the safety rules and a command stopped with Esc as ✓ successes, though both showed ✗ live."""

from __future__ import annotations

from helpers import wait_for

from catbuddy.config import Settings
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets.messages import ToolBlock

SIZE = (100, 32)


def app_for(workspace, llm, **kwargs) -> CatbuddyApp:
    settings = Settings(
        model="scripted", base_url=llm.base_url, api_key="test", max_retries=0, approval="yolo"
    )
    return CatbuddyApp(workspace, settings, approval_arm_delay=0.0, **kwargs)


def idle(app) -> bool:
    return app.loop is not None and app.status.info.state == "idle" and app.loop.state.value == "idle"


def shown(app) -> list[tuple[str, str, str]]:
    """Each tool block's name, status and the header line it shows."""
    return [(b.tool_name, b.status, b.header_text().plain) for b in app.transcript.query(ToolBlock)]


async def run_refused_and_stopped(workspace, llm) -> list[tuple[str, str, str]]:
    """A turn whose first call the safety rules refuse (`rm -rf ~`, in yolo mode too) and whose second,
    `sleep 30`, the user stops with Esc. Returns what the live app showed."""
    llm.push(
        Reply.tool_call("exec", {"command": "rm -rf ~"}), Reply.tool_call("exec", {"command": "sleep 30"})
    )
    app = app_for(workspace, llm)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        app.prompt.load_text("clean up, then wait")
        app.query_one("#completer").display = False
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(app.transcript.query(ToolBlock)) == 2, what="the second call")
        await wait_for(pilot, lambda: app.transcript.query(ToolBlock)[1].status == "running", what="running")
        await pilot.pause(0.2)
        await pilot.press("escape")
        await wait_for(pilot, lambda: idle(app), timeout=10, what="stopped")
        await wait_for(pilot, lambda: app.transcript.query(ToolBlock)[1].status != "running", what="answered")
        return shown(app)


async def test_continue_shows_the_refused_and_the_stopped_call_as_failed_as_they_were_live(
    workspace, scripted_llm
) -> None:
    live = await run_refused_and_stopped(workspace, scripted_llm)
    assert [status for _, status, _ in live] == ["error", "error"]
    assert "✗ refused" in live[0][2] and "✗ stopped" in live[1][2]

    app = app_for(workspace, scripted_llm, continue_latest=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id and idle(app), what="the resumed session")
        resumed = shown(app)

    assert [(name, status) for name, status, _ in resumed] == [("exec", "error"), ("exec", "error")]
    assert "✗ refused" in resumed[0][2] and "✓" not in resumed[0][2]
    assert "✗ stopped" in resumed[1][2] and "✓" not in resumed[1][2]


async def test_resume_by_id_shows_a_successful_and_a_failing_command_as_they_ended(
    workspace, scripted_llm
) -> None:
    scripted_llm.push(
        Reply.tool_calls(("exec", {"command": "echo fine"}), ("exec", {"command": "echo broken; exit 3"})),
        Reply.text("one worked"),
    )
    app = app_for(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        app.prompt.load_text("run both")
        app.query_one("#completer").display = False
        await pilot.press("enter")
        await wait_for(pilot, lambda: idle(app) and len(app.transcript.query(ToolBlock)) == 2, what="done")
        live = [(name, status) for name, status, _ in shown(app)]
        session_id = app.loop.session_id

    app = app_for(workspace, scripted_llm, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id == session_id, what="the resumed session")
        resumed = shown(app)

    assert live == [("exec", "done"), ("exec", "error")]
    assert [(name, status) for name, status, _ in resumed] == live
    assert "✗ exit 3" in resumed[1][2]


async def test_a_session_stored_before_results_carried_a_status_shows_it_as_unknown(workspace) -> None:
    store = SessionStore(workspace.sessions_dir)
    with store.create(workspace.work_root, "scripted") as session:
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "exec", "arguments": '{"command": "ls"}'},
        }
        session.append_message({"role": "user", "content": "list"})
        session.append_message({"role": "assistant", "content": None, "tool_calls": [call]})
        session.append_message({"role": "tool", "tool_call_id": "c1", "content": "Refused: an old refusal"})
    settings = Settings(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="test")
    app = CatbuddyApp(workspace, settings, resume=session.id)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id == session.id, what="the resumed session")
        [(name, status, header)] = shown(app)

    assert (name, status) == ("exec", "unknown")
    assert "✓" not in header and "✗" not in header
