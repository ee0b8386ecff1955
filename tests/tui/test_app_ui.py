"""Pilot tests of the UI against the fake loop: streaming, queue, keys, tool blocks, notices."""

from __future__ import annotations

import io
import re

from helpers import texts, type_text, wait_for
from rich.console import Console

from catbuddy.agent import events as ev
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock, UserBlock
from catbuddy.tui.widgets.prompt import Completer, QueuedView
from catbuddy.tui.widgets.reply import AssistantBlock
from catbuddy.tui.widgets.status import context_colour

SIZE = (100, 32)


async def test_reply_streams_into_markdown_and_user_text_has_no_runtime_block(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        await type_text(pilot, "hello")
        await pilot.press("enter")
        await wait_for(pilot, lambda: texts(app, UserBlock), what="user block")
        holder["loop"].emit(ev.TextDelta(text="Hi **the"))
        holder["loop"].emit(ev.TextDelta(text="re**"))
        await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["Hi **there**"], what="streamed text")
        assert texts(app, UserBlock) == ["hello"]
        assert holder["loop"].submitted == ["hello"]


async def test_input_typed_during_a_turn_is_queued_and_shown(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "first")
        await pilot.press("enter")
        await type_text(pilot, "second")
        await pilot.press("enter")
        queued = app.query_one(QueuedView)
        await wait_for(pilot, lambda: queued.display, what="queued view")
        assert "second" in str(queued.render())
        assert app.status.info.queued == 1
        holder["loop"].reply("done")
        await wait_for(pilot, lambda: texts(app, UserBlock) == ["first", "second"], what="queued turn")
        await wait_for(pilot, lambda: not queued.display, what="queue emptied")


async def test_escape_stops_the_turn_then_clears_the_input(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        holder["loop"].emit(ev.TextDelta(text="partial"))
        await type_text(pilot, "draft")
        await pilot.press("escape")
        await wait_for(pilot, lambda: holder["loop"].stopped == 1, what="stop")
        await wait_for(pilot, lambda: any("stopped" in t for t in texts(app, NoticeBlock)), what="notice")
        assert app.prompt.text == "draft"
        await pilot.press("escape")
        assert app.prompt.text == ""
        assert app.status.info.state == "idle"


async def test_ctrl_c_twice_exits_with_the_session_id(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause(0.05)
    assert app.return_value == "s-20250101-0001"
    assert holder["loop"].closed


async def test_newlines_with_ctrl_j_and_shift_enter_then_enter_sends(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await pilot.press("a", "ctrl+j", "b", "shift+enter", "c")
        assert app.prompt.text == "a\nb\nc"
        await pilot.press("enter")
        await wait_for(pilot, lambda: holder["loop"].submitted == ["a\nb\nc"], what="multi-line submit")


async def test_up_and_down_walk_the_input_history(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        for word in ("one", "two"):
            await type_text(pilot, word)
            await pilot.press("enter")
        await type_text(pilot, "dra")
        await pilot.press("up")
        assert app.prompt.text == "two"
        await pilot.press("up")
        assert app.prompt.text == "one"
        await pilot.press("down", "down")
        assert app.prompt.text == "dra"


async def test_slash_completion_shows_descriptions_and_tab_accepts(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "/ed")
        completer = app.query_one(Completer)
        assert completer.display
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(completer.get_option_at_index(0).prompt)  # a name column and a description column
        label = console.export_text()
        assert "/edit" in label and "workspace file" in label
        await pilot.press("tab")
        assert app.prompt.text == "/edit "
        assert not completer.display


async def test_tool_calls_are_compact_blocks_that_expand_and_show_errors(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        loop = holder["loop"]
        loop.emit(ev.ToolCallStarted(call_id="c1", name="read_file", arguments='{"path": "a.py"}'))
        loop.emit(ev.ToolCallFinished(call_id="c1", name="read_file", result="print(1)", duration=0.25))
        loop.emit(ev.ToolCallStarted(call_id="c2", name="exec", arguments='{"command": "false"}'))
        loop.emit(
            ev.ToolCallFinished(call_id="c2", name="exec", result="exit 1", is_error=True, duration=0.1)
        )
        blocks = await wait_for(pilot, lambda: list(app.transcript.query(ToolBlock)), what="tool blocks")
        await wait_for(pilot, lambda: blocks[1].status == "error")
        header = str(blocks[0]._header.render())
        assert "read_file" in header and "path=a.py" in header and "250ms" in header
        assert blocks[1].has_class("error")
        await pilot.click(blocks[0])
        await wait_for(pilot, lambda: blocks[0].query(".tool-details"), what="details")
        assert blocks[0].expanded


async def test_notices_for_governance_compaction_retry_and_errors(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        loop = holder["loop"]
        loop.emit(ev.GovernanceReported(report={}, summary="3 old results compacted, 12,400 tokens saved"))
        loop.emit(ev.Retrying(attempt=2, delay=4, reason="HTTP 429"))
        loop.emit(
            ev.CompactionFinished(
                ok=True, folded_messages=30, tokens_before=20_000, tokens_after=4_000, summary_tokens=800
            )
        )
        loop.emit(ev.ErrorOccurred(message="Connection refused", hint="Is the server running?"))
        await wait_for(pilot, lambda: len(texts(app, NoticeBlock)) == 5, what="notices")
        welcome, *shown = texts(app, NoticeBlock)
        assert "/help" in welcome
        assert "12,400 tokens saved" in shown[0]
        assert "attempt 2" in shown[1]
        assert "30 messages" in shown[2] and "16,000 saved" in shown[2]
        assert "Connection refused" in shown[3] and "Is the server running?" in shown[3]
        errors = [n for n in app.transcript.query(NoticeBlock) if n.level == "error"]
        assert len(errors) == 1


async def test_status_bar_shows_context_and_turns_red_near_the_threshold(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].emit(ev.ContextStatus(used=20_500, budget=26_000, compact_at=21_000, model="scripted"))
        await wait_for(pilot, lambda: app.status.info.used == 20_500)
        assert "20.5k/26k 79%" in str(app.status.render())
        assert context_colour(20_500, 26_000, 21_000) == "red"
        assert context_colour(16_000, 26_000, 21_000) == "yellow"
        assert context_colour(2_000, 26_000, 21_000) == "green"


async def test_streaming_does_not_yank_a_view_the_user_scrolled_up(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        loop = holder["loop"]
        for index in range(12):
            loop.begin_turn(f"question {index}")
            loop.reply("answer line\n\n" * 3)
        await wait_for(pilot, lambda: len(texts(app, AssistantBlock)) == 12)
        transcript = app.transcript
        await wait_for(pilot, lambda: transcript.max_scroll_y > 0, what="a transcript taller than the screen")
        transcript.scroll_to(y=0, animate=False, immediate=True)
        transcript.release_anchor()
        await pilot.pause(0.05)
        loop.begin_turn("more")
        loop.emit(ev.TextDelta(text="streaming " * 50))
        await wait_for(pilot, lambda: "streaming" in (texts(app, AssistantBlock)[-1]))
        await pilot.pause(0.1)
        assert transcript.scroll_y == 0


async def test_ctrl_c_twice_while_the_session_opens_still_names_it(fake_app) -> None:
    # Issue 31: two quick Ctrl+C right after start-up, before the session had opened in the
    # background, exited without a session id (no "Resume this session with" line).
    import asyncio

    opened = asyncio.Event()

    def slow_start(loop) -> None:
        async def start() -> None:
            await opened.wait()

        loop.start = start

    app, holder = fake_app(setup=slow_start)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "loop" in holder, what="the session to start opening")
        await pilot.press("ctrl+c")
        await pilot.press("ctrl+c")
        assert app.is_running  # waiting for the session, not gone without it
        opened.set()
        for _ in range(500):  # not pilot.pause: it waits on an app that is going away
            if app.return_value is not None:
                break
            await asyncio.sleep(0.01)
    assert app.return_value == "s-20250101-0001"
    assert holder["loop"].closed


async def test_typing_while_a_tool_block_has_focus_goes_to_the_input(fake_app) -> None:
    # Issue 31: after selecting a tool block, typed text vanished and Enter collapsed the block.
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        loop = holder["loop"]
        loop.emit(ev.ToolCallStarted(call_id="c1", name="read_file", arguments='{"path": "a.py"}'))
        loop.emit(ev.ToolCallFinished(call_id="c1", name="read_file", result="print(1)", duration=0.25))
        loop.end_turn(ev.TurnEndReason.DONE)
        blocks = await wait_for(pilot, lambda: list(app.transcript.query(ToolBlock)), what="tool block")
        block = blocks[0]
        await pilot.click(block)
        await wait_for(pilot, lambda: app.focused is block and block.expanded, what="the block selected")

        await type_text(pilot, "next one")
        await pilot.press("enter")

        await wait_for(pilot, lambda: loop.submitted == ["go", "next one"], what="the typed message sent")
        assert block.expanded  # Enter sent the message; it did not collapse the block
        assert app.focused is app.prompt


async def test_a_running_tool_shows_how_long_it_has_been_running(fake_app) -> None:
    # Issue 31: a running tool showed "…" with no elapsed time.
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        holder["loop"].emit(ev.ToolCallStarted(call_id="c1", name="exec", arguments='{"command": "make"}'))
        blocks = await wait_for(pilot, lambda: list(app.transcript.query(ToolBlock)), what="tool block")
        block = blocks[0]
        assert "0s" not in str(block._header.render())  # not at once

        block.started -= 12  # as if it had started 12 s ago: the next tick shows it
        shown = await wait_for(
            pilot, lambda: re.search(r"… (\d+)s", str(block._header.render())), what="elapsed time"
        )
        assert 12 <= int(shown.group(1)) < 40
        holder["loop"].emit(ev.ToolCallFinished(call_id="c1", name="exec", result="ok", duration=12.3))
        await wait_for(pilot, lambda: block.status == "done")
        assert "12.3s" in str(block._header.render()) and "…" not in str(block._header.render())
