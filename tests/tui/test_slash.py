"""Every slash command, driven through the prompt as a user types it."""

from __future__ import annotations

import io
from dataclasses import replace

from fake_loop import FakeSession
from helpers import texts, wait_for
from rich.console import Console

from catbuddy.agent import events as ev
from catbuddy.config import ModelSpec
from catbuddy.tui.screens.choice import ChoicePicker
from catbuddy.tui.screens.context import ContextScreen, context_table
from catbuddy.tui.screens.editor import EditorScreen
from catbuddy.tui.screens.sessions import SessionPicker
from catbuddy.tui.widgets.messages import NoticeBlock, UserBlock

SIZE = (100, 32)


async def run_command(app, pilot, text: str) -> None:
    await wait_for(pilot, lambda: app.loop, what="loop start")
    app.prompt.load_text(text)
    await pilot.press("enter")
    await pilot.pause(0.05)


def last_notice(app) -> str:
    shown = texts(app, NoticeBlock)
    return shown[-1] if shown else ""


async def test_help_typed_key_by_key_lists_every_command_and_the_keys(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await pilot.press("/", "h", "e", "l", "p", "enter")
        text = await wait_for(pilot, lambda: last_notice(app))
        for name in ("/compact", "/context", "/edit", "/resume", "/copy", "/approval"):
            assert name in text
        assert "Esc" in text and "Ctrl+J" in text


async def test_unknown_command_suggests_the_closest(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/contxt")
        assert "Did you mean /context?" in await wait_for(pilot, lambda: last_notice(app))
        assert holder["loop"].submitted == []


async def test_stop_stops_a_running_turn(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("long job")
        await wait_for(pilot, lambda: app.status.info.state == "running")
        await run_command(app, pilot, "/stop")
        await wait_for(pilot, lambda: holder["loop"].stopped == 1)


async def test_new_starts_a_fresh_session_and_clears_the_transcript(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("old")
        holder["loop"].reply("old answer")
        await wait_for(pilot, lambda: texts(app, UserBlock))
        await run_command(app, pilot, "/new")
        await wait_for(pilot, lambda: app.status.info.session_id == "s-20250101-0002")
        assert texts(app, UserBlock) == []
        assert app.session_id == "s-20250101-0002"


async def test_compact_passes_instructions_and_reports_the_result(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/compact keep the API decisions")
        await wait_for(pilot, lambda: "compacted 12 messages" in last_notice(app))
        assert holder["loop"].compacted == ["keep the API decisions"]


async def test_compact_undo_shows_what_came_back_as_a_notice(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/compact")
        await wait_for(pilot, lambda: "compacted 12 messages" in last_notice(app))
        await run_command(app, pilot, "/compact undo")
        await wait_for(pilot, lambda: "Undid compaction c000001" in last_notice(app))
        assert holder["loop"].undone == 1 and holder["loop"].compacted == []


async def test_compact_undo_with_nothing_to_undo_says_so(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/compact undo")
        await wait_for(pilot, lambda: "Nothing to undo" in last_notice(app))
        assert holder["loop"].undone == 1


async def test_compact_while_running_says_to_wait(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("busy")
        await run_command(app, pilot, "/compact")
        assert "wait" in await wait_for(pilot, lambda: last_notice(app))
        assert holder["loop"].compacted == []


async def test_context_shows_layers_history_budget_and_calibration(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/context")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen)
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(context_table(screen.report))
        table = console.export_text()
        for part in ("bootstrap", "history (24 messages)", "8,400", "26,624", "calibration", "21,299"):
            assert part in table
        await pilot.press("escape")
        assert not isinstance(app.screen, ContextScreen)


async def test_edit_saves_the_workspace_file(fake_app, workspace) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/edit soul")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        area = screen.area(0)
        area.load_text("# Soul\nAlways answer in haiku.\n")
        await pilot.press("ctrl+s", "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EditorScreen))
        path = workspace.project_dir / "SOUL.md"
        assert path.read_text() == "# Soul\nAlways answer in haiku.\n"
        assert "next turn" in last_notice(app)


async def test_edit_without_a_known_file_lists_the_choices(fake_app) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/edit notes.txt")
        text = await wait_for(pilot, lambda: last_notice(app))
        assert "AGENTS.md" in text and "MEMORY.md" in text


async def test_escape_with_unsaved_edits_asks_once_then_discards(fake_app, workspace) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/edit USER.md")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        screen.area(0).load_text("changed")
        await pilot.press("escape")
        assert isinstance(app.screen, EditorScreen)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, EditorScreen))
        assert not (workspace.project_dir / "USER.md").exists()


async def test_memory_edits_both_memory_files(fake_app, workspace) -> None:
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/memory")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen)
        assert [f.path for f in screen.files] == [workspace.project_memory, workspace.global_memory]
        screen.area(0).load_text("- project fact\n")
        screen.area(1).load_text("- global fact\n")
        await pilot.press("ctrl+s")
        assert workspace.project_memory.read_text() == "- project fact\n"
        assert workspace.global_memory.read_text() == "- global fact\n"


def with_sessions(loop) -> None:
    loop.sessions = [
        FakeSession("s-1", "2025-01-01T10:00:00", "2025-01-01T10:30:00", 12, "fix the parser", 4_096),
        FakeSession("s-2", "2025-01-02T09:00:00", "2025-01-02T09:05:00", 4, "write the README", 900),
    ]


async def test_sessions_picker_resumes_the_chosen_session(fake_app) -> None:
    app, holder = fake_app(setup=with_sessions)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/sessions")
        picker = await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker) and app.screen)
        assert [s.id for s in picker.sessions] == ["s-2", "s-1"]  # newest first
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: holder["loop"].resumed == ["s-1"])
        await wait_for(pilot, lambda: texts(app, UserBlock) == ["first message of s-1"])
        assert app.status.info.session_id == "s-1"


async def test_resume_by_id_and_a_clear_error_for_an_unknown_one(fake_app) -> None:
    app, holder = fake_app(setup=with_sessions)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/resume s-2")
        await wait_for(pilot, lambda: holder["loop"].resumed == ["s-2"])
        await run_command(app, pilot, "/resume nope")
        assert "Could not resume nope" in await wait_for(
            pilot, lambda: "nope" in last_notice(app) and last_notice(app)
        )
        assert app.session_id == "s-2"


async def test_model_switches_for_the_session(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/model gpt-4o-mini")
        await wait_for(pilot, lambda: app.status.info.model == "gpt-4o-mini")
        assert holder["loop"].model == "gpt-4o-mini"
        await run_command(app, pilot, "/model")
        assert "gpt-4o-mini" in last_notice(app)


async def test_approval_switches_mode_and_rejects_unknown_ones(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/approval auto-edit")
        await wait_for(pilot, lambda: app.status.info.approval == "auto-edit")
        await run_command(app, pilot, "/approval sometimes")
        assert "not a mode" in last_notice(app)
        assert holder["loop"].approval_mode == "auto-edit"


async def test_approval_without_a_mode_opens_a_picker(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/approval")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker), what="approval picker")
        await pilot.press("down", "down", "enter")  # ask → auto-edit → yolo
        await wait_for(pilot, lambda: app.status.info.approval == "yolo")
        assert holder["loop"].approval_mode == "yolo"
        assert not isinstance(app.screen, ChoicePicker)


async def test_model_without_a_name_picks_among_configured_models(fake_app, settings) -> None:
    configured = replace(settings, models={"local-coder": ModelSpec(32_768, 4_096)})
    app, holder = fake_app(settings=configured)
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker), what="model picker")
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.status.info.model == "local-coder")
        assert holder["loop"].model == "local-coder"


async def test_picker_escape_changes_nothing(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/approval")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker), what="approval picker")
        await pilot.press("down", "escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ChoicePicker), what="picker closed")
        assert holder["loop"].approval_mode == "ask"


async def test_copy_puts_the_last_reply_on_the_clipboard_and_in_a_file(fake_app, workspace) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("q")
        holder["loop"].reply("the answer")
        await run_command(app, pilot, "/copy")
        await wait_for(pilot, lambda: "Copied" in last_notice(app))
        assert app.clipboard == "the answer"
        assert (workspace.home / "last_reply.md").read_text() == "the answer"


async def test_exit_closes_the_loop_and_returns_the_session_id(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await run_command(app, pilot, "/exit")
        await pilot.pause(0.05)
    assert app.return_value == "s-20250101-0001"
    assert holder["loop"].closed
    assert holder["loop"].state == ev.LoopState.IDLE


async def test_context_at_80_columns_keeps_each_part_on_one_line(fake_app) -> None:
    from catbuddy.context.governance.report import PartSize

    def with_parts(loop) -> None:
        loop.report.layers[1].parts = [
            PartSize(label="AGENTS.md", path="/p/AGENTS.md", tokens=296, default=True),
            PartSize(label="services/api/CLAUDE.md", path="/p/services/api/CLAUDE.md", tokens=96),
        ]

    app, _ = fake_app(setup=with_parts)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_command(app, pilot, "/context")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen)
        width = screen.table_width()
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(context_table(screen.report, width))
        lines = console.export_text().splitlines()
        assert width < 80
        assert any("AGENTS.md (shipped default)" in line and "296" in line for line in lines)
        assert any("services/api/CLAUDE.md" in line and "96" in line for line in lines)


def undo_plan(conflicts: list[str]):
    from catbuddy.checkpoints.journal import TurnRecord
    from catbuddy.checkpoints.manager import Restore

    turn = TurnRecord("t2", "s", "m000003", "a" * 40, "b" * 40, 0.0)
    return Restore([turn], ["a.py", "b.py"], conflicts)


async def test_undo_lists_the_files_and_asks_before_restoring(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].undo_plan = undo_plan([])
        holder["loop"].restored = []
        await run_command(app, pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker))
        assert "a.py" in last_notice(app) and "b.py" in last_notice(app)
        assert holder["loop"].restored == []  # nothing before the answer
        await pilot.press("enter")  # "restore 2 file(s)"
        await wait_for(pilot, lambda: "restored 2 file(s)" in last_notice(app))
        assert holder["loop"].restored == [("undo", False)]


async def test_undo_with_a_file_changed_since_offers_to_keep_it(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].undo_plan = undo_plan(["b.py"])
        holder["loop"].restored = []
        await run_command(app, pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker))
        assert "b.py  ← changed since the turn" in last_notice(app)
        await pilot.press("down", "enter")  # keep the ones changed since
        await wait_for(pilot, lambda: "kept as you changed them: b.py" in last_notice(app))
        assert holder["loop"].restored == [("undo", False)]


async def test_undo_with_nothing_to_undo_says_so(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].undo_plan = None
        await run_command(app, pilot, "/undo")
        assert "Nothing to undo" in await wait_for(pilot, lambda: last_notice(app))


async def test_rewind_picks_a_message_and_rewinds_the_conversation(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        loop = holder["loop"]
        loop.messages = [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "one"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "two"},
        ]
        loop.rewound = []
        await run_command(app, pilot, "/rewind")
        await wait_for(pilot, lambda: isinstance(app.screen, ChoicePicker))
        await pilot.press("enter")  # the newest user message first: m000003 "second"
        await wait_for(
            pilot, lambda: isinstance(app.screen, ChoicePicker) and "Restore what" in app.screen.title_text
        )
        await pilot.press("down", "enter")  # the conversation only
        await wait_for(pilot, lambda: "ends just before m000003" in last_notice(app))
        assert loop.rewound == ["m000003"] and len(loop.messages) == 2


async def test_fork_starts_a_session_and_says_how_to_resume_it(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].forks = []
        await run_command(app, pilot, "/fork")
        assert "/resume s-20250101-0009" in await wait_for(pilot, lambda: last_notice(app))
        assert holder["loop"].forks == [None]
async def test_context_at_80x24_scrolls_to_its_last_line_with_the_keys(fake_app) -> None:
    # Issue 31: at 80×24 calibration, sandbox, Dream and the "folded" line were below the fold, and
    # Down, PageDown, End did nothing.
    def tall(loop) -> None:
        loop.report.sandbox = "bubblewrap (workspace-write, no network)"
        loop.report.folded_messages = 7

    app, _ = fake_app(setup=tall)
    async with app.run_test(size=(80, 24)) as pilot:
        await run_command(app, pilot, "/context")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen)
        await pilot.pause(0.05)
        view = screen.query_one("#context-scroll")
        assert view.max_scroll_y > 0, "the content fits: the test proves nothing"
        box = screen.query_one("#context-box").region
        assert box.bottom <= 24
        await pilot.press("end")
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y, what="scrolled to the end")
        await pilot.press("home")
        await wait_for(pilot, lambda: view.scroll_y == 0, what="back at the top")
        await pilot.press("pagedown")
        await wait_for(pilot, lambda: view.scroll_y > 0, what="a page down")
        assert view.region.bottom <= box.bottom  # the end of the scroll is inside the box, on screen
        assert isinstance(app.screen, ContextScreen)  # the keys scrolled; they did not close it


async def test_at_80x24_the_completion_list_leaves_the_input_in_view_and_indents_its_wraps(fake_app) -> None:
    # Issue 31: at 80 columns the list wrapped its hints to column 0 and "/" alone covered the input.
    from textual.widgets import OptionList

    app, _ = fake_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        await pilot.press("slash")
        completer = app.query_one(OptionList)
        await wait_for(pilot, lambda: completer.display and completer.option_count > 5, what="the list")
        await pilot.pause(0.05)

        prompt = app.prompt.region
        assert prompt.height >= 1 and prompt.bottom <= 24
        assert completer.region.bottom <= prompt.y  # above the input, not over it
        console = Console(width=60, record=True, file=io.StringIO())
        for index in range(completer.option_count):
            console.print(completer.get_option_at_index(index).prompt)
        lines = console.export_text().splitlines()
        wrapped = [line for line in lines if line and not line.startswith("/")]
        assert wrapped and all(line.startswith("    ") for line in wrapped)  # under the descriptions
