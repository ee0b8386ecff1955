"""The status bar: the same context figure as /context after every request, and a layout that keeps
what matters at 80 columns."""

from __future__ import annotations

import pytest
from helpers import wait_for
from test_e2e import idle, real_app, send

from catbuddy.testing.script import Reply
from catbuddy.tui.screens.approval import ApprovalScreen
from catbuddy.tui.widgets.status import StatusInfo, render_status, short_session_id, short_tokens

SESSION = "20261203-074621-f4e990"


def bar_figure(app) -> str:
    return render_status(app.status.info, app.status.size.width).plain


def assert_matches_context(app) -> None:
    report = app.loop.context_report()
    assert app.status.info.used == report.used
    assert f"{short_tokens(report.used)}/{short_tokens(report.budget)}" in bar_figure(app)


@pytest.mark.parametrize("factor", [1.0, 1.37])  # 1.37: the provider counts more, calibration moves
async def test_the_figure_equals_context_after_a_reply_with_tool_calls(workspace, scripted_llm_factory, factor):
    llm = scripted_llm_factory(
        [Reply.tool_call("exec", {"command": "echo hi | tee hi.txt"}, text="Let me run it. " * 40), Reply.text("done")],
        prompt_token_factor=factor,
    )
    app = real_app(workspace, llm)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(app, pilot, "run echo")
        # The approval holds the turn between the first reply and its tool result.
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="approval")
        await pilot.pause(0.1)
        assert_matches_context(app)
        await pilot.press("1")
        await wait_for(pilot, lambda: idle(app), what="idle")
        await pilot.pause(0.1)
        assert_matches_context(app)


async def test_the_figure_equals_context_after_each_of_several_turns(workspace, scripted_llm_factory):
    llm = scripted_llm_factory([Reply.text("word " * n) for n in (50, 400, 900)], prompt_token_factor=1.2)
    app = real_app(workspace, llm)
    async with app.run_test(size=(120, 40)) as pilot:
        for text in ("one", "two", "three"):
            await send(app, pilot, text)
            await wait_for(pilot, lambda: idle(app) and app.loop._turn_task.done(), what="idle")
            await pilot.pause(0.1)
            assert_matches_context(app)


def test_short_tokens_rounds_to_tenths_of_a_thousand() -> None:
    assert [short_tokens(n) for n in (999, 8_391, 8_349, 14_000, 123_456, 2_500_000)] == [
        "999", "8.4k", "8.3k", "14k", "123k", "2.5M"
    ]


def test_a_session_id_shortens_to_the_prefix_resume_accepts() -> None:
    assert short_session_id(SESSION) == "20261203-074621"
    assert short_session_id("some-other-format-id") == "some-oth"


@pytest.mark.parametrize("state", ["idle", "running"])
@pytest.mark.parametrize("model", ["scripted", "gpt-4o-2024-08-06"])
def test_at_80_columns_model_state_figure_and_approval_stay(state, model) -> None:
    info = StatusInfo(
        model=model, state=state, used=14_352, budget=27_648, compact_at=22_118, session_id=SESSION,
        approval="auto-edit",
    )
    text = render_status(info, 80).plain
    assert len(text) <= 80
    for part in (model, state, "14.4k/27.6k", "approval auto-edit"):
        assert part in text
    assert not text.rstrip().endswith("session")  # never an id cut down to its label


def test_at_80_columns_the_session_id_is_shortened_not_cut() -> None:
    info = StatusInfo(model="scripted", state="idle", used=4_000, budget=27_648, session_id=SESSION, approval="ask")
    text = render_status(info, 80).plain
    assert len(text) <= 80
    assert text.rstrip().endswith("20261203-074621")


def test_a_wide_terminal_shows_the_whole_id() -> None:
    info = StatusInfo(model="scripted", state="idle", used=4_000, budget=27_648, session_id=SESSION, approval="ask")
    assert f"session {SESSION}" in render_status(info, 120).plain


def test_an_unsandboxed_warning_is_kept_at_80_columns() -> None:
    info = StatusInfo(
        model="scripted", state="idle", used=4_000, budget=27_648, session_id=SESSION, approval="ask",
        sandbox="unavailable",
    )
    text = render_status(info, 80).plain
    assert "sandbox unavailable" in text and "approval ask" in text and len(text) <= 80
