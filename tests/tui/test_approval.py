"""The approval dialog: each choice reaches the loop, and early keys are not taken as answers."""

from __future__ import annotations

import pytest
from helpers import type_text, wait_for

from catbuddy.agent import events as ev
from catbuddy.tui.screens.approval import ApprovalScreen
from catbuddy.tui.widgets.messages import ToolBlock

SIZE = (100, 32)
DIFF = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('old')\n+print('new')\n"


def request(name: str = "exec") -> ev.ApprovalRequested:
    return ev.ApprovalRequested(
        call_id="c1",
        name=name,
        arguments={"command": "git push origin main"} if name == "exec" else {"path": "app.py"},
        summary="git push origin main" if name == "exec" else "app.py",
        preview="git push origin main" if name == "exec" else DIFF,
        suggested_pattern="git" if name == "exec" else "",
    )


async def open_dialog(app, holder, pilot, name: str = "exec") -> list:
    """Announce an approval request as the loop would; returns the list the loop's answers land in."""
    await wait_for(pilot, lambda: app.loop)
    holder["loop"].emit(request(name))
    await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen), what="dialog")
    return holder["loop"].answers


async def answer_of(pilot, answers: list) -> ev.ApprovalDecision:
    await wait_for(pilot, lambda: answers, what="an answer")
    call_id, choice, note, pattern = answers[0]
    assert call_id == "c1"
    return ev.ApprovalDecision(choice, note, pattern)


@pytest.mark.parametrize(
    ("keys", "choice", "pattern"),
    [
        (["1"], ev.ApprovalChoice.ALLOW_ONCE, ""),
        (["a"], ev.ApprovalChoice.ALLOW_SESSION, "git"),
        (["n"], ev.ApprovalChoice.DENY, ""),
        (["down", "down", "enter"], ev.ApprovalChoice.DENY, ""),
    ],
)
async def test_each_choice_answers_the_loop(fake_app, keys, choice, pattern) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        answers = await open_dialog(app, holder, pilot)
        await pilot.press(*keys)
        decision = await answer_of(pilot, answers)
        assert decision.choice is choice and decision.pattern == pattern
        assert not isinstance(app.screen, ApprovalScreen)


async def test_deny_with_a_note_sends_the_note(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        answers = await open_dialog(app, holder, pilot, name="edit_file")
        await pilot.press("4")
        await type_text(pilot, "use a branch")
        await pilot.press("enter")
        decision = await answer_of(pilot, answers)
        assert decision.choice is ev.ApprovalChoice.DENY_WITH_NOTE
        assert decision.note == "use a branch"


async def test_keys_in_the_first_half_second_are_not_answers(fake_app) -> None:
    # The app's real delay is 0.5 s; a longer one keeps this test honest on a busy CI machine, where
    # opening the dialog and pressing three keys can itself take longer than half a second.
    app, holder = fake_app(approval_arm_delay=2.0)
    async with app.run_test(size=SIZE) as pilot:
        answers = await open_dialog(app, holder, pilot)
        await pilot.press("1", "enter", "y")
        assert not answers
        await pilot.pause(2.05)
        await pilot.press("3")
        decision = await answer_of(pilot, answers)
        assert decision.choice is ev.ApprovalChoice.DENY


async def test_tool_block_waits_for_approval_and_dialog_closes_when_the_turn_stops(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        holder["loop"].begin_turn("push it")
        answers = await open_dialog(app, holder, pilot)
        block = app.transcript.query_one(ToolBlock)
        assert block.status == "waiting"
        await holder["loop"].stop()
        await wait_for(pilot, lambda: not isinstance(app.screen, ApprovalScreen), what="dialog closed")
        assert not (await answer_of(pilot, answers)).allowed
