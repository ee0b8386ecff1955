"""One fresh process for bench_tui_stream.py: stream replies into a TUI and report its CPU seconds.

    python bench/_tui_stream_driver.py bare BASE_URL
    python bench/_tui_stream_driver.py catbuddy BASE_URL REPLIES

The scripted server runs in the parent (its CPU is not counted here); it holds the replies already.
Both sides read the stream with the real ``openai`` SDK and run headless at the same size:

- ``bare``: a bare Textual app, one ``Markdown`` widget fed through ``Markdown.get_stream`` on every
  chunk (what a plain Textual front end does);
- ``catbuddy``: the real app and AgentLoop; ``REPLIES`` messages are sent one after another.

Prints one JSON line: ``cpu`` (a list, one figure per reply: CPU seconds of this process from the
request to the reply fully on screen) and ``chars`` (what each reply showed).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

SIZE = (120, 40)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run_bare(base_url: str) -> dict[str, list[float]]:
    from openai import AsyncOpenAI
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Markdown

    class BareStream(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield Markdown()

    app = BareStream()
    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.query_one(Markdown)
        stream = Markdown.get_stream(view)
        shown = 0
        before = cpu()
        chunks = await client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "go"}], stream=True
        )
        async for chunk in chunks:
            text = chunk.choices[0].delta.content if chunk.choices else None
            if text:
                shown += len(text)
                await stream.write(text)
                app.query_one(VerticalScroll).scroll_end(animate=False)
        await stream.stop()
        await pilot.pause()
        spent = cpu() - before
    await client.close()
    return {"cpu": [spent], "chars": [shown]}


async def run_catbuddy(base_url: str, replies: int) -> dict[str, list[float]]:
    from catbuddy.agent.events import TurnEnded
    from catbuddy.config import ModelSpec, Settings
    from catbuddy.tui.app import CatbuddyApp
    from catbuddy.tui.widgets.reply import AssistantBlock
    from catbuddy.workspace import Workspace

    root = Path(tempfile.mkdtemp(prefix="bench-tui-stream-")).resolve()
    (root / "proj").mkdir()
    settings = Settings(
        model="scripted",
        base_url=base_url,
        api_key="bench",
        max_retries=0,
        models={"scripted": ModelSpec(1_000_000, 4_096)},  # no compaction in the middle of a figure
    )
    app = CatbuddyApp(Workspace(work_root=root / "proj", home=root / "home"), settings)
    spent: list[float] = []
    chars: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        while app.loop is None:
            await pilot.pause(0.01)
        ended = asyncio.Event()
        app.loop.add_listener(lambda event: ended.set() if isinstance(event, TurnEnded) else None)
        for index in range(replies):
            ended.clear()
            before = cpu()
            app.loop.submit(f"reply number {index + 1}")
            await ended.wait()
            await pilot.pause()  # the screen has taken the whole reply in
            spent.append(cpu() - before)
            chars.append(len(app.transcript.query(AssistantBlock).last().text))
    return {"cpu": spent, "chars": chars}


def main() -> None:
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    mode, base_url = sys.argv[1], sys.argv[2]
    if mode == "bare":
        result = asyncio.run(run_bare(base_url))
    else:
        result = asyncio.run(run_catbuddy(base_url, int(sys.argv[3])))
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # as catbuddy exits: no interpreter teardown to measure or wait for


if __name__ == "__main__":
    main()
