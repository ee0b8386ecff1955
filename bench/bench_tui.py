"""TUI figures: first frame, opening a 1,000-message session, input latency while a reply streams,
and memory over a 2,000-message session.

    python bench/bench_tui.py

Runs headless (Textual's test driver) against the real AgentLoop; the streaming case uses the
scripted server at 500 tokens/s. Baselines measured in the same run: the first frame of a bare
Textual app (one Static, one TextArea), and the memory after the first 500 messages.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Static, TextArea

from catbuddy.agent.events import TurnEnded
from catbuddy.config import Settings
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets.messages import AssistantBlock, UserBlock
from catbuddy.workspace import Workspace

SIZE = (120, 40)
SESSION_MESSAGES = 1000
LONG_RUN_MESSAGES = 2000
MEMORY_CHECKPOINTS = (500, 1000, 1500, 2000)
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


class BareApp(App[None]):
    """The baseline: what any Textual app of this shape costs to paint."""

    def compose(self) -> ComposeResult:
        yield Static("hello")
        yield TextArea()

    def on_mount(self) -> None:
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.painted_at = time.perf_counter()


async def bare_first_frame() -> float:
    started = time.perf_counter()
    app = BareApp()
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: hasattr(app, "painted_at"))
        return app.painted_at - started


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


async def long_run_memory(llm: ScriptedLLM, settings: Settings) -> list[tuple[int, float, int, float]]:
    """Drive the app through a 2,000-message session (the server echoes each message) and read the
    process's resident memory, the mounted blocks and the time per turn (submit to the screen
    settled) at each checkpoint. The server runs in this process and records every request (each
    holding the whole history), so the bench drops those records as it goes: what is measured is the
    app and the agent loop. Messages go in through the loop, as the prompt sends them."""
    app = CatbuddyApp(workspace(), settings)
    readings: list[tuple[int, float, int, float]] = []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.loop is not None)
        loop = app.loop
        ended = asyncio.Event()
        loop.add_listener(lambda event: ended.set() if isinstance(event, TurnEnded) else None)
        since, turns_since, turn = time.perf_counter(), 0, 0
        while len(readings) < len(MEMORY_CHECKPOINTS):
            turn += 1
            ended.clear()
            loop.submit(f"message number {turn}: " + "some words to echo back " * 8)
            await ended.wait()
            await pilot.pause()  # the screen has taken the reply in
            llm.clear_requests()
            turns_since += 1
            count = len(loop.transcript())
            if count >= MEMORY_CHECKPOINTS[len(readings)]:
                gc.collect()
                per_turn = (time.perf_counter() - since) / turns_since * 1000
                readings.append((count, rss_mb(), len(app.transcript.blocks), per_turn))
                since, turns_since = time.perf_counter(), 0
    return readings


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
        bare = await bare_first_frame()
        frame = await first_frame(settings)
        print(f"first frame:                  {frame * 1000:7.0f} ms (app start to first paint, headless)")
        print(f"  bare Textual app baseline:  {bare * 1000:7.0f} ms  → catbuddy ×{frame / bare:.2f}")
        opened, mounted = await open_long_session(settings)
        print(
            f"open {SESSION_MESSAGES}-message session:   {opened * 1000:7.0f} ms "
            f"({mounted} blocks mounted; the rest behind 'load earlier'; ×{opened / bare:.2f} the bare app)"
        )
        latencies, streamed = await input_latency(llm, settings)
        latencies.sort()
        p95 = latencies[int(len(latencies) * 0.95) - 1]
        print(
            f"input latency while streaming: median {statistics.median(latencies) * 1000:.1f} ms, "
            f"p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms "
            f"({KEYSTROKES} keys at {STREAM_TOKENS_PER_SECOND} tok/s; {streamed:,} chars streamed meanwhile)"
        )
        readings = await long_run_memory(llm, settings)
        base_rss = readings[0][1]
        print(f"memory over a {LONG_RUN_MESSAGES:,}-message session (resident MB, mounted blocks):")
        for count, rss, blocks, per_turn in readings:
            print(
                f"  {count:>5,} messages: {rss:7.1f} MB  ×{rss / base_rss:.2f} of the 500-message reading, "
                f"{blocks} blocks, {per_turn:.0f} ms per turn (submit to screen settled) since the last reading"
            )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
