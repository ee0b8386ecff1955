"""TUI figures: first frame, opening a 1,000-message session, input latency while a reply streams.

    python bench/bench_tui.py

Runs headless (Textual's test driver) against the real AgentLoop; the streaming case uses the
scripted server at 500 tokens/s. Prints one line per figure.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from textual import events

from catbuddy.config import Settings
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets.messages import AssistantBlock, UserBlock
from catbuddy.workspace import Workspace

SIZE = (120, 40)
SESSION_MESSAGES = 1000
STREAM_TOKENS_PER_SECOND = 500
KEYSTROKES = 40


def workspace() -> Workspace:
    root = Path(tempfile.mkdtemp(prefix="bench-tui-"))
    (root / "proj").mkdir()
    return Workspace(work_root=root / "proj", home=root / "home")


def long_session(ws: Workspace, count: int) -> str:
    session = SessionStore(ws.sessions_dir).create(ws.work_root, "scripted")
    for turn in range(count // 4):
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        }
        session.append_message({"role": "user", "content": f"question {turn}\n\n[runtime: time=x]"})
        session.append_message({"role": "assistant", "content": None, "tool_calls": [call]})
        session.append_message({"role": "tool", "tool_call_id": f"c{turn}", "content": "x = 1\n" * 20})
        session.append_message(
            {"role": "assistant", "content": f"Answer {turn}:\n\n```python\nprint({turn})\n```\n"}
        )
    session.close()
    return session.id


async def until(pilot, condition, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not met")
        await pilot.pause(0.005)


async def first_frame(settings: Settings) -> float:
    ws = workspace()
    started = time.perf_counter()
    app = CatbuddyApp(ws, settings)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.first_frame_at is not None)
        return app.first_frame_at - started  # type: ignore[operator]


async def open_long_session(settings: Settings) -> tuple[float, int]:
    ws = workspace()
    session_id = long_session(ws, SESSION_MESSAGES)
    started = time.perf_counter()
    app = CatbuddyApp(ws, settings, resume=session_id)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.session_id == session_id and app.transcript.query(UserBlock))
        await pilot.pause(0)  # one more refresh: the mounted blocks are laid out and painted
        return time.perf_counter() - started, len(app.transcript.blocks)


async def input_latency(llm: ScriptedLLM, settings: Settings) -> tuple[list[float], int]:
    """Time from a key press to the prompt holding the character, while a reply streams."""
    chunk = 4  # ~1 token per 4 characters
    delay = 1 / STREAM_TOKENS_PER_SECOND
    paragraph = "Streaming a realistic reply with `code` and **bold** words, line after line.\n" * 4
    llm.push(Reply.text((paragraph + "\n") * 80, chunk_size=chunk, delay=delay))
    app = CatbuddyApp(workspace(), settings)
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.loop is not None)
        app.prompt.load_text("talk")
        await pilot.press("enter")
        await until(pilot, lambda: app.transcript.query(AssistantBlock))
        for index in range(KEYSTROKES):
            expected = "x" * (index + 1)
            pressed = time.perf_counter()
            # Post the key as the terminal driver would; Pilot.press waits for an idle app, which a
            # streaming app never is, so it would measure the wait rather than the latency.
            app.post_message(events.Key("x", "x"))
            while app.prompt.text != expected:
                await asyncio.sleep(0.001)
            latencies.append(time.perf_counter() - pressed)
            await asyncio.sleep(0.05)  # a fast typist: 20 keys a second
        streamed = len(app.transcript.query(AssistantBlock).last().text)
        await app.loop.stop()
    return latencies, streamed


async def main() -> None:
    with ScriptedLLM([]) as llm:
        settings = Settings(model="scripted", base_url=llm.base_url, api_key="bench", max_retries=0)
        frame = await first_frame(settings)
        print(f"first frame:                  {frame * 1000:7.0f} ms (app start to first paint, headless)")
        opened, mounted = await open_long_session(settings)
        print(
            f"open {SESSION_MESSAGES}-message session:   {opened * 1000:7.0f} ms "
            f"({mounted} blocks mounted; the rest behind 'load earlier')"
        )
        latencies, streamed = await input_latency(llm, settings)
        latencies.sort()
        p95 = latencies[int(len(latencies) * 0.95) - 1]
        print(
            f"input latency while streaming: median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms "
            f"({KEYSTROKES} keys at {STREAM_TOKENS_PER_SECOND} tok/s; {streamed:,} chars streamed meanwhile)"
        )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
