"""The model's reasoning in the TUI: a dim block that streams, folds when the answer starts, and opens on a click."""

from __future__ import annotations

from helpers import texts, wait_for
from test_e2e import SIZE, idle, real_app, send

from catbuddy.testing.script import Reply
from catbuddy.tui.widgets.reply import AssistantBlock
from catbuddy.tui.widgets.thinking import ThinkingBlock


async def test_reasoning_folds_when_the_answer_starts_and_opens_on_a_click(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("Paris.", reasoning="The capital of France is Paris; say so briefly."))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "capital of France?")
        await wait_for(pilot, lambda: texts(app, AssistantBlock), what="reply")
        await wait_for(pilot, lambda: idle(app), what="idle")
        (block,) = app.query(ThinkingBlock)
        assert block.text == "The capital of France is Paris; say so briefly."
        assert block.collapsed and not block.streaming
        assert texts(app, AssistantBlock) == ["Paris."]
        await pilot.click(ThinkingBlock)
        assert not block.collapsed


def test_a_streaming_block_shows_it_is_thinking() -> None:
    block = ThinkingBlock()
    assert block.streaming and not block.collapsed
    block.finish()
    assert block.collapsed


async def test_a_resumed_session_shows_its_stored_reasoning_folded(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("Paris.", reasoning="France's capital."))
    first = real_app(workspace, scripted_llm)
    async with first.run_test(size=SIZE) as pilot:
        await send(first, pilot, "capital of France?")
        await wait_for(pilot, lambda: idle(first), what="idle")
        session_id = first.loop.session_id
    again = real_app(workspace, scripted_llm, resume=session_id)
    async with again.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: again.status.info.session_id and idle(again), what="the resumed session"
        )
        (block,) = again.transcript.query(ThinkingBlock)
        assert block.collapsed and block.text == "France's capital."
