"""`/edit` on a workspace that was never initialised: the shipped default opens in place, and only a
save creates the one file; `/edit AGENTS.md` opens the nearest instructions file the prompt reads."""

from __future__ import annotations

from helpers import wait_for

from catbuddy.tui.screens.editor import EditorScreen
from catbuddy.workspace import shipped_default

SIZE = (100, 32)


async def open_editor(app, pilot, command: str) -> EditorScreen:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(command)
    await pilot.press("enter")
    return await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)


async def test_edit_soul_opens_the_shipped_default_and_saving_creates_only_that_file(fake_app, workspace):
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor(app, pilot, "/edit SOUL.md")
        assert screen.area(0).text == shipped_default("SOUL.md")
        assert not workspace.project_dir.exists()  # opening creates nothing
        screen.area(0).load_text(shipped_default("SOUL.md") + "- Answer in French.\n")
        await pilot.press("ctrl+s", "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EditorScreen))

    assert sorted(p.name for p in workspace.project_dir.iterdir()) == ["SOUL.md"]
    assert (workspace.project_dir / "SOUL.md").read_text().endswith("- Answer in French.\n")


async def test_closing_the_default_unsaved_creates_nothing(fake_app, workspace):
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await open_editor(app, pilot, "/edit TOOLS.md")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EditorScreen))

    assert not workspace.project_dir.exists()


async def test_edit_agents_opens_the_work_roots_claude_md_when_it_has_no_agents_md(fake_app, workspace):
    (workspace.work_root / "CLAUDE.md").write_text("# Rules\nUse tabs.\n")
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor(app, pilot, "/edit AGENTS.md")
        assert screen.files[0].path == workspace.work_root / "CLAUDE.md"
        assert screen.area(0).text == "# Rules\nUse tabs.\n"


async def test_edit_agents_without_any_instructions_opens_the_default_for_catbuddys_copy(fake_app, workspace):
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_editor(app, pilot, "/edit AGENTS.md")
        assert screen.files[0].path == workspace.project_dir / "AGENTS.md"
        assert screen.area(0).text == shipped_default("AGENTS.md")
