"""A reply is one widget drawing Markdown line by line, re-rendering only the piece that changed
(issue 31: a Markdown widget per block made every update re-lay out the whole transcript)."""

from __future__ import annotations

from helpers import type_text, wait_for

from catbuddy.agent import events as ev
from catbuddy.tui.widgets.reply import CHUNK_CHARS, AssistantBlock, chunks_of, split_point

SIZE = (100, 32)
CODE = "```python\n" + "x = 1\n\n" * 200 + "```\n\n"  # blank lines inside a fence: no place to cut


def long_markdown(sections: int) -> str:
    return "".join(
        f"## Part {n}\n\nSome **prose** for part {n}, with `code`.\n\n- one\n- two\n\n```python\nprint({n})\n```\n\n"
        for n in range(sections)
    )


def test_a_reply_is_cut_only_at_blank_lines_outside_code_fences() -> None:
    text = "intro\n\n" + CODE + "after the code\n\nmore"

    cut = split_point(text, 1)

    assert text[:cut] == "intro\n\n"
    assert split_point(text, cut + 1) == len("intro\n\n" + CODE)


def test_the_pieces_of_a_reply_put_back_together_are_the_reply() -> None:
    text = long_markdown(60) + CODE + "the end"

    pieces = chunks_of(text)

    assert "".join(pieces) == text
    assert len(pieces) > 10
    assert all(len(piece) < CHUNK_CHARS * 3 for piece in pieces if "```python\nx = 1" not in piece)


async def test_a_long_streamed_reply_is_one_widget_showing_its_end(fake_app) -> None:
    app, holder = fake_app()
    text = long_markdown(80) + "The very last line."
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        for start in range(0, len(text), 500):
            holder["loop"].emit(ev.TextDelta(text=text[start : start + 500]))
            await pilot.pause(0.01)
        holder["loop"].emit(ev.AssistantMessage(message={"role": "assistant", "content": text}))
        reply = await wait_for(
            pilot,
            lambda: (
                app.transcript.query(AssistantBlock).first().text == text
                and app.transcript.query(AssistantBlock).first()
            ),
        )
        await pilot.pause(0.1)

        assert list(reply.query("*")) == []  # no child widgets, however long the reply
        assert len(reply._pieces) > 10
        shown = [reply.render_line(y).text for y in range(reply.size.height)]
        assert "The very last line." in shown[-1]
        assert any("Part 79" in line for line in shown)
        assert any("print(40)" in line for line in shown)


async def test_streaming_more_text_renders_only_the_last_piece_again(fake_app) -> None:
    app, holder = fake_app()
    text = long_markdown(30)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop)
        await type_text(pilot, "go")
        await pilot.press("enter")
        holder["loop"].emit(ev.TextDelta(text=text))
        reply = (await wait_for(pilot, lambda: list(app.transcript.query(AssistantBlock))))[0]
        await wait_for(pilot, lambda: len(reply._lines) == len(reply._pieces) > 3, what="rendered")
        before = list(reply._lines)

        holder["loop"].emit(ev.TextDelta(text="and a few more words"))
        await wait_for(pilot, lambda: reply.text.endswith("more words") and len(reply._lines) == len(before))

        assert all(new is old for new, old in zip(reply._lines[:-1], before[:-1], strict=True))
        assert reply._lines[-1] is not before[-1]
        assert "and a few more words" in reply._lines[-1][-1].text
