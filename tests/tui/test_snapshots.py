"""Snapshots of the main screens (fake loop: fixed ids, no clocks, no animations)."""

from __future__ import annotations

from pathlib import Path

from fake_loop import FakeLoop, FakeSession
from helpers import wait_for

from catbuddy.agent import events as ev
from catbuddy.config import Settings
from catbuddy.tui.app import CatbuddyApp
from catbuddy.workspace import Workspace

SIZE = (110, 34)
FIXED = Workspace(work_root=Path("/snap/proj"), home=Path("/snap/home"))
SETTINGS = Settings(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="test")
DIFF = (
    "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,4 +1,4 @@\n def main():\n"
    "-    print('hello')\n+    print('hello, world')\n     return 0\n"
)


def make(settings: Settings = SETTINGS) -> tuple[CatbuddyApp, dict[str, FakeLoop]]:
    holder: dict[str, FakeLoop] = {}

    def factory(workspace, settings, **kwargs):
        loop = holder["loop"] = FakeLoop(workspace, settings, **kwargs)
        loop.sessions = [
            FakeSession(
                "20250103-091500-a1b2c3",
                "2025-01-03T09:15:00",
                "2025-01-03T09:48:00",
                86,
                "Refactor the session store so loading tolerates torn lines",
                184_320,
            ),
            FakeSession(
                "20250102-163000-d4e5f6",
                "2025-01-02T16:30:00",
                "2025-01-02T17:02:00",
                12,
                "Why does the parser choke on nested tables?",
                9_830,
            ),
            FakeSession(
                "20250101-080000-778899", "2025-01-01T08:00:00", "2025-01-01T08:01:00", 2, "hello", 640
            ),
        ]
        return loop

    app = CatbuddyApp(FIXED, settings, loop_factory=factory, approval_arm_delay=0.0)
    return app, holder


async def conversation(pilot, holder) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.loop)
    loop = holder["loop"]
    loop.begin_turn("Add a --verbose flag to the CLI and show me the diff")
    loop.emit(ev.TextDelta(text="I'll look at the CLI entry point first."))
    loop.emit(
        ev.AssistantMessage(
            message={"role": "assistant", "content": "I'll look at the CLI entry point first."}
        )
    )
    loop.emit(ev.ToolCallStarted(call_id="c1", name="read_file", arguments='{"path": "src/cli.py"}'))
    loop.emit(ev.ToolCallFinished(call_id="c1", name="read_file", result="import typer\n", duration=0.04))
    loop.emit(ev.ToolCallStarted(call_id="c2", name="exec", arguments='{"command": "pytest -q tests/cli"}'))
    loop.emit(ev.ToolCallFinished(call_id="c2", name="exec", result="1 failed", is_error=True, duration=1.3))
    loop.emit(ev.GovernanceReported(report={}, summary="3 old results compacted, 12,400 tokens saved"))
    loop.emit(ev.ContextStatus(used=14_210, budget=26_624, compact_at=21_299, model="scripted"))
    reply = "Added the flag:\n\n```python\n@app.command()\ndef main(verbose: bool = False) -> None:\n    ...\n```\n\nOne test fails; "
    loop.emit(ev.TextDelta(text=reply))
    loop.queued.append("also update the README")
    app.refresh_queue()
    await wait_for(pilot, lambda: not app._events, what="events applied")
    # The prompt's cursor blinks every 0.5 s from when it was focused: held still (and shown) so the
    # picture does not depend on how long start-up and the events took.
    app.prompt.cursor_blink = False
    await pilot.pause(0.2)


def test_main_screen_mid_conversation(snap_compare) -> None:
    app, holder = make()

    async def run_before(pilot) -> None:
        await conversation(pilot, holder)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_dialog_with_a_diff(snap_compare) -> None:
    app, holder = make()

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("say hello to the world")
        holder["loop"].emit(
            ev.ApprovalRequested(
                call_id="c9",
                name="edit_file",
                arguments={"path": "src/app.py"},
                summary="src/app.py",
                preview=DIFF,
            )
        )
        await wait_for(pilot, lambda: app.screen.id == "approval")
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_context_screen(snap_compare) -> None:
    app, _ = make()

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.loop)
        app.prompt.load_text("/context")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen.id == "context-screen")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_resume_picker(snap_compare) -> None:
    app, _ = make()

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.loop)
        app.prompt.load_text("/resume")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen.id == "session-picker")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_setup_screen(snap_compare) -> None:
    app, _ = make(Settings())

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.screen.id == "setup")
        await pilot.pause(0.1)

    assert snap_compare(app, terminal_size=(110, 40), run_before=run_before)


def test_setup_screen_at_80x24(snap_compare, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app, _ = make(Settings())

    async def run_before(pilot) -> None:
        await wait_for(pilot, lambda: app.screen.id == "setup")
        app.screen.query_one("#setup-model").value = "gpt-4o"
        app.screen.query_one("#setup-save").focus()  # scrolls down to the key warning and the buttons
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_main_screen_at_80_columns(snap_compare) -> None:
    app, holder = make()

    async def run_before(pilot) -> None:
        await conversation(pilot, holder)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
