"""/memory log|diff|undo, /dream, the ask-mode dialog and versioned saves, in the app."""

from __future__ import annotations

from helpers import texts, wait_for

from catbuddy.agent import events as ev
from catbuddy.config import MemorySettings, Settings
from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.versions import MemoryVersions
from catbuddy.testing.script import Reply
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.screens.context import ContextScreen
from catbuddy.tui.screens.editor import EditorScreen
from catbuddy.tui.screens.memory import DreamScreen, MemoryView
from catbuddy.tui.widgets.messages import NoticeBlock

SIZE = (100, 32)


async def run_command(app, pilot, text: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(text)
    app.query_one("#completer").display = False
    await pilot.press("enter")
    await pilot.pause(0.05)


def last_notice(app) -> str:
    shown = texts(app, NoticeBlock)
    return shown[-1] if shown else ""


def versions(workspace) -> MemoryVersions:
    return MemoryVersions(MemoryPaths.of(workspace))


def view_text(app) -> str:
    return str(app.screen.body) if isinstance(app.screen, MemoryView) else ""


async def test_saving_memory_in_the_editor_keeps_the_previous_version(fake_app, workspace) -> None:
    workspace.ensure_home()
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/memory")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.area(1).load_text("- global fact\n")
        await pilot.press("ctrl+s")
    # The project file did not exist, so the save created it too: a change of its own.
    changes = versions(workspace).history().changes
    assert {(c.source, c.records[0].file) for c in changes} == {("editor", "global"), ("editor", "project")}
    change = next(c for c in changes if c.records[0].file == "global")
    assert change.sessions == ("s-20250101-0001",)
    before, after = versions(workspace).texts(change, "global")
    assert "<!--" in (before or "") and after == "- global fact\n"


async def test_edit_memory_md_is_versioned_too(fake_app, workspace) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/edit MEMORY.md")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.area(0).load_text("- a project fact\n")
        await pilot.press("ctrl+s", "escape")
    assert [c.records[0].file for c in versions(workspace).history().changes] == ["project"]


async def test_memory_log_diff_and_undo(fake_app, workspace) -> None:
    workspace.ensure_home()
    versions(workspace).write({"project": "- first\n"}, source="dream", sessions=["s-a"])
    versions(workspace).write({"project": "- first\n- second\n"}, source="editor")
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/memory log")
        log = await wait_for(pilot, lambda: view_text(app))
        assert log.index("#2") < log.index("#1") and "dream" in log and "sessions: s-a" in log
        assert "/memory diff [N]" in log
        await pilot.press("escape")
        await run_command(app, pilot, "/memory diff 1")
        assert "+- first" in await wait_for(pilot, lambda: view_text(app))
        await pilot.press("escape")
        await run_command(app, pilot, "/memory undo")
        assert "Undid change #2 (editor" in await wait_for(
            pilot, lambda: "Undid" in last_notice(app) and last_notice(app)
        )
        assert workspace.project_memory.read_text() == "- first\n"
        await run_command(app, pilot, "/memory diff last")
        assert "is not a change number" in await wait_for(pilot, lambda: last_notice(app))
        await run_command(app, pilot, "/memory forget")
        assert "/memory log" in await wait_for(
            pilot, lambda: "unknown" in last_notice(app) and last_notice(app)
        )


async def test_memory_diff_with_no_changes_says_so(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/memory diff")
        assert "no memory changes yet" in await wait_for(pilot, lambda: last_notice(app))


async def test_dream_runs_through_the_loop_and_reports(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/dream")
        await wait_for(pilot, lambda: "Nothing to dream about" in last_notice(app))
        await run_command(app, pilot, "/dream --dry-run")
        await wait_for(pilot, lambda: holder["loop"].dreams == [False, True])
        await run_command(app, pilot, "/dream now please")
        assert "Usage: /dream" in await wait_for(pilot, lambda: last_notice(app))


async def test_the_ask_dialog_shows_the_diff_and_answers_the_loop(fake_app) -> None:
    app, holder = fake_app()
    diff = "--- a/global/MEMORY.md\n+++ b/global/MEMORY.md\n@@ -1 +1,2 @@\n # Memory\n+- Likes tea.\n"
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].emit(ev.DreamProposed("dream-1", diff, "+1 −0 ~0", 2))
        screen = await wait_for(pilot, lambda: isinstance(app.screen, DreamScreen) and app.screen)
        screen.arm_delay = 0
        await pilot.press("1")
        await wait_for(pilot, lambda: holder["loop"].dream_answers)
        holder["loop"].emit(ev.DreamProposed("dream-2", diff, "+1 −0 ~0", 2))
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, DreamScreen) and app.screen.proposal.proposal_id == "dream-2",
        )
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(holder["loop"].dream_answers) == 2)
    assert holder["loop"].dream_answers == [
        ("dream-1", ev.DreamChoice.APPLY),
        ("dream-2", ev.DreamChoice.LATER),
    ]


async def test_context_shows_pending_entries_and_the_last_dream(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/context")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen)
        assert "2 entries pending for Dream" in screen.memory and "last Dream: never" in screen.memory


async def test_the_app_dreams_in_the_background_and_shows_a_one_line_notice(workspace, scripted_llm) -> None:
    workspace.ensure_home()
    Journal(MemoryPaths.of(workspace)).append("earlier", "session", "User: I use vim")

    def model(body):
        if not body.get("tools") and "## Project Context" in str(body["messages"]):
            return Reply.text("## User Profile\n- ADD: Uses vim.\n\n## Project Context\n- NONE\n")
        return Reply.text("hi")

    scripted_llm.push(*[model] * 3)
    settings = Settings(
        model="scripted",
        base_url=scripted_llm.base_url,
        api_key="test",
        max_retries=0,
        memory=MemorySettings(dream_idle_minutes=0.002),
    )
    app = CatbuddyApp(workspace, settings, approval_arm_delay=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: "memory: +1 −0 ~0 — /memory diff" in texts(app, NoticeBlock), timeout=10
        )
    assert "- Uses vim." in workspace.global_memory.read_text()
