"""Keys that arrive faster than the app handles them: a slash command typed and sent in one burst,
and typing while an overlay is open."""

from __future__ import annotations

import pytest
from helpers import burst, wait_for

SIZE = (100, 32)


@pytest.mark.parametrize("command, screen_id", [("/context", "context-screen"), ("/resume", "session-picker")])
async def test_a_full_slash_command_sent_in_one_burst_runs(fake_app, command, screen_id) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop")
        burst(app, command, "enter")
        await wait_for(pilot, lambda: app.screen.id == screen_id, what=f"{command} opened")
        assert app.prompt.text == ""
        assert holder["loop"].submitted == []


async def test_a_prefix_shared_by_commands_runs_the_one_typed_not_the_highlighted(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop")
        # "/co" lists /compact first; the burst's Enter must still run /copy as typed.
        burst(app, "/copy", "enter")
        await wait_for(pilot, lambda: app.prompt.text == "" and app._events == [], what="sent")
        await pilot.pause(0.1)
        assert holder["loop"].compacted == []
        assert app.query_one("#completer").display is False


@pytest.mark.parametrize("first, rest", [("/co", "ntext"), ("/", "context"), ("/cont", "ext")])
async def test_enter_runs_the_typed_command_when_the_list_still_shows_an_earlier_prefix(
    fake_app, first, rest
) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop")
        burst(app, first)
        await wait_for(pilot, lambda: app.query_one("#completer").display, what="completion list")
        burst(app, rest, "enter")  # the list is updated only after these keys are handled
        await wait_for(pilot, lambda: app.screen.id == "context-screen", what="/context opened")
        assert holder["loop"].compacted == [] and app.prompt.text == ""


OVERLAYS = [("/context", "context-screen"), ("/resume", "session-picker"), ("/approval", "choice-picker")]


async def open_overlay(app, pilot, command: str, screen_id: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop")
    app.prompt.load_text(command)
    await pilot.press("enter")
    await wait_for(pilot, lambda: app.screen.id == screen_id, what=f"{command} open")


@pytest.mark.parametrize("command, screen_id", OVERLAYS)
async def test_typing_over_an_overlay_closes_it_and_keeps_every_key(fake_app, command, screen_id) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_overlay(app, pilot, command, screen_id)
        burst(app, "quick question: why?")  # the q must not close it and vanish
        await wait_for(pilot, lambda: app.prompt.text == "quick question: why?", what="typed text")
        assert app.screen.id != screen_id
        assert app.focused is app.prompt


async def test_keys_typed_one_by_one_over_an_overlay_all_arrive(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_overlay(app, pilot, "/context", "context-screen")
        await pilot.press("h", "i")
        await wait_for(pilot, lambda: app.prompt.text == "hi", what="typed text")
        assert app.screen.id != "context-screen"


async def test_a_paste_over_an_overlay_lands_in_the_input(fake_app) -> None:
    from textual import events

    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_overlay(app, pilot, "/context", "context-screen")
        app.post_message(events.Key("x", "x"))
        app.post_message(events.Paste(" pasted text"))
        await wait_for(pilot, lambda: app.prompt.text == "x pasted text", what="pasted text")


async def test_typed_text_and_enter_over_an_overlay_send_the_message(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_overlay(app, pilot, "/context", "context-screen")
        burst(app, "go on", "enter")
        await wait_for(pilot, lambda: holder["loop"].submitted == ["go on"], what="sent")


@pytest.mark.parametrize("command, screen_id", OVERLAYS)
async def test_arrows_and_escape_still_belong_to_the_overlay(fake_app, command, screen_id) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_overlay(app, pilot, command, screen_id)
        await pilot.press("down", "up")
        assert app.screen.id == screen_id and app.prompt.text == ""
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen.id != screen_id, what="closed")
        assert app.prompt.text == ""
