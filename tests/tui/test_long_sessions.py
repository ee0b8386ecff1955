"""Long sessions: only the newest messages are mounted, old blocks are pruned and can be re-mounted."""

from __future__ import annotations

from helpers import make_long_session, texts, wait_for

from catbuddy.config import Settings
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets import transcript as transcript_module
from catbuddy.tui.widgets.messages import ToolBlock, UserBlock
from catbuddy.tui.widgets.reply import AssistantBlock

SIZE = (100, 32)


def resumed_app(workspace, messages: int) -> tuple[CatbuddyApp, str]:
    """The app resuming a session of ``messages`` messages (no model is reached)."""
    session_id = make_long_session(workspace, messages)
    settings = Settings(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="test")
    return CatbuddyApp(workspace, settings, resume=session_id), session_id


async def test_resuming_1000_messages_mounts_only_the_newest_and_loads_earlier_on_demand(workspace) -> None:
    app, session_id = resumed_app(workspace, 1000)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id == session_id, what="resumed session")
        transcript = app.transcript
        assert len(transcript.blocks) <= transcript_module.INITIAL_MESSAGES
        assert texts(app, UserBlock)[-1] == "question 249"
        assert transcript.load_button.display
        assert "949 more" in str(transcript.load_button.label)  # a page never starts on a tool result
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause(0.05)
        await pilot.click("#load-earlier")
        await wait_for(pilot, lambda: "question 225" in texts(app, UserBlock), what="earlier page")
        assert "899 more" in str(transcript.load_button.label)
        tools = list(transcript.query(ToolBlock))
        assert all(tool.status == "done" for tool in tools)
    assert app.session_id == session_id


async def test_old_blocks_are_pruned_beyond_the_cap_and_come_back_in_order(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        loop = holder["loop"]
        turns = 90  # 180 blocks: past PRUNE_AT
        for index in range(turns):
            loop.begin_turn(f"q{index}")
            loop.reply(f"a{index}")
        await wait_for(
            pilot, lambda: texts(app, UserBlock)[-1:] == [f"q{turns - 1}"], timeout=30, what="all turns"
        )
        await wait_for(
            pilot, lambda: not app._events and app.status.info.state == "idle", what="events applied"
        )
        transcript = app.transcript
        assert len(transcript.blocks) <= transcript_module.PRUNE_AT
        first_mounted = texts(app, UserBlock)[0]
        assert first_mounted != "q0" and transcript.load_button.display
        await transcript.load_earlier(loop.transcript())
        await pilot.pause(0.05)
        users = texts(app, UserBlock)
        expected_first = int(first_mounted[1:]) - transcript_module.PAGE_MESSAGES // 2
        assert users[:2] == [f"q{expected_first}", f"q{expected_first + 1}"]
        assert users == [f"q{i}" for i in range(expected_first, turns)]
        assert texts(app, AssistantBlock)[0] == f"a{expected_first}"


def wheel_up(widget) -> None:
    from textual import events

    widget.post_message(events.MouseScrollUp(widget, 1, 1, 0, -1, 0, False, False, False))


async def test_scrolling_up_at_the_top_mounts_older_pages_until_the_whole_history_is_shown(workspace) -> None:
    """Nothing is lost to lazy mounting: scrolling up past the top (the wheel, or Up / Page Up / Home
    with the transcript focused) mounts the page before, keeping in view what was on screen, until
    the session's first message is there."""
    app, session_id = resumed_app(workspace, 200)  # 50 turns: 4 pages
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id == session_id, what="resumed session")
        transcript = app.transcript
        assert texts(app, UserBlock)[0] != "question 0" and transcript.load_button.display
        transcript.scroll_home(animate=False, immediate=True)
        await pilot.pause(0.05)
        first_shown = texts(app, UserBlock)[0]
        wheel_up(transcript)  # at the top already: the page before comes in
        await wait_for(pilot, lambda: texts(app, UserBlock)[0] != first_shown, what="older page by wheel")
        await pilot.pause(0.05)
        assert transcript.scroll_y > 0  # what the user was reading stayed in view, the new page is above
        transcript.focus()
        for key in ("home", "up", "home", "pageup", "home", "up", "home", "up"):
            await pilot.press(key)
            await pilot.pause(0.05)
            if not transcript.has_earlier():
                break
        await wait_for(pilot, lambda: not transcript.has_earlier(), what="whole history mounted")
        assert not transcript.load_button.display
        assert texts(app, UserBlock) == [f"question {turn}" for turn in range(50)]
        assert texts(app, AssistantBlock)[0].startswith("Answer **0**")
        assert all(tool.status == "done" for tool in transcript.query(ToolBlock))


async def test_scrolling_up_away_from_the_top_only_scrolls(workspace) -> None:
    app, session_id = resumed_app(workspace, 200)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.info.session_id == session_id, what="resumed session")
        await pilot.pause(0.05)
        transcript = app.transcript
        mounted = len(transcript.blocks)
        assert transcript.scroll_y > 0  # opened at the newest message
        wheel_up(transcript)
        await pilot.pause(0.1)
        assert len(transcript.blocks) == mounted
