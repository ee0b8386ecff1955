"""Custom commands in the app: listed in /help (with any file that could not be loaded), completed by
Tab, and sent to the loop (which expands them) rather than called unknown."""

from __future__ import annotations

import pytest
from helpers import texts, wait_for

from catbuddy.tui.widgets import slash_table
from catbuddy.tui.widgets.messages import NoticeBlock

SIZE = (100, 32)


@pytest.fixture(autouse=True)
def _no_commands_left_over():
    yield
    slash_table.set_custom([])


def add_commands(workspace) -> None:
    folder = workspace.work_root / ".catbuddy" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1\n"
    )
    (folder / "broken.md").write_text("---\nmodle: x\n---\nbody\n")


async def test_help_lists_custom_commands_and_broken_files(fake_app, workspace) -> None:
    add_commands(workspace)
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        app.prompt.load_text("/help")
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: any("Custom commands" in t for t in texts(app, NoticeBlock)), what="help"
        )
        shown = next(t for t in texts(app, NoticeBlock) if "Custom commands" in t)
        assert "/review FILE" in shown and "Review a file" in shown
        assert "broken.md: unknown frontmatter key(s): modle" in shown


async def test_tab_completes_a_custom_command_and_enter_sends_it_to_the_loop(fake_app, workspace) -> None:
    add_commands(workspace)
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop and "review" in slash_table.CUSTOM, what="commands loaded")
        app.prompt.focus()
        await pilot.press("/", "r", "e", "v", "tab")
        await wait_for(pilot, lambda: app.prompt.text == "/review ", what="completed")
        await pilot.press("c", "a", "l", "c", "enter")
        await wait_for(pilot, lambda: holder["loop"].submitted == ["/review calc"], what="sent to the loop")
