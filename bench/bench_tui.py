"""TUI figures, each beside a baseline measured in the same run.

    python bench/bench_tui.py [--quick]

Start-up in FRESH processes (bench/_tui_driver.py), interleaved round by round, medians of 7 (3 with
--quick): catbuddy's first frame against a bare Textual app's (one Static, one TextArea), measured
the same way — from process start and from app construction to the first paint — and each whole
process from start to exit; opening a 1,000-message session with --resume against opening a new
(empty) one. Each round runs one process of each kind (bare, catbuddy, catbuddy --resume, catbuddy
again as the empty-session baseline), the order rotating; one unmeasured round first. The catbuddy
processes are isolated: a temporary CATBUDDY_HOME (its config.toml points at the scripted server this
bench runs), HOME, XDG places and work root, and none of the user's CATBUDDY_* / OPENAI_* variables.
In process (Textual's test driver, the real AgentLoop, the scripted server at 500 tokens/s):
input latency while a reply streams against the bare app's idle TextArea, and (not with --quick)
memory and time per turn over a 2,000-message session against the 500-message reading.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json  # noqa: E402
import subprocess  # noqa: E402

from _bare_app import BareApp  # noqa: E402
from _fresh import compile_catbuddy  # noqa: E402
from _table import Figure, quick, report  # noqa: E402
from textual import events
from textual.widgets import TextArea

from catbuddy.agent.events import TurnEnded
from catbuddy.config import Settings
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets.reply import AssistantBlock
from catbuddy.workspace import Workspace

SIZE = (120, 40)
SESSION_MESSAGES = 1000
LONG_RUN_MESSAGES = 2000
MEMORY_CHECKPOINTS = (500, 1000, 1500, 2000)
STREAM_TOKENS_PER_SECOND = 500
KEYSTROKES = 40


def workspace() -> Workspace:
    root = Path(tempfile.mkdtemp(prefix="bench-tui-")).resolve()
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


DRIVER = Path(__file__).resolve().parent / "_tui_driver.py"
ROUNDS = 3 if quick() else 7
KINDS = ("bare", "catbuddy", "resume", "new")  # one fresh process of each per round


def isolated_env(base_url: str, root: Path) -> dict[str, str]:
    """The environment of a catbuddy process: its own CATBUDDY_HOME (config.toml pointing at the
    scripted server), HOME and XDG places in the bench's temporary folder, and none of the user's
    catbuddy or OpenAI variables: nothing of the real user's home is read or written."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "scripted"\nbase_url = "{base_url}"\nmax_retries = 0\n', encoding="utf-8"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CATBUDDY_", "OPENAI_", "XDG_")) and key not in ("HOME", "NO_COLOR")
    }
    user_home = root / "user-home"
    user_home.mkdir(exist_ok=True)
    env.update(
        CATBUDDY_HOME=str(home),
        OPENAI_API_KEY="bench",
        HOME=str(user_home),
        XDG_CONFIG_HOME=str(user_home / ".config"),
        XDG_CACHE_HOME=str(user_home / ".cache"),
        XDG_DATA_HOME=str(user_home / ".local" / "share"),
        TEXTUAL_ANIMATIONS="none",
    )
    return env


def fresh(mode: str, env: dict[str, str], cwd: Path, session_id: str | None = None) -> dict[str, float]:
    """One fresh process: ms from spawn to each mark, and to exit."""
    args = [sys.executable, str(DRIVER), mode, *([session_id] if session_id else [])]
    spawned = time.monotonic()
    try:
        done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        raise SystemExit(f"{mode} driver timed out after 120 s: {stderr[-4000:]}") from None
    exited = time.monotonic()
    if done.returncode != 0:
        raise SystemExit(f"{mode} driver failed ({done.returncode}): {done.stderr[-4000:]}")
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    result = {name: (at - spawned) * 1000 for name, at in marks.items()}
    result["exit"] = (exited - spawned) * 1000
    result["construct_to_paint"] = (marks["painted"] - marks["constructed"]) * 1000
    return result


def fresh_process_figures(base_url: str) -> list[Figure]:
    """A bare Textual app, catbuddy (a new session), catbuddy --resume of a 1,000-message session and
    catbuddy again (the empty-session baseline), each in a fresh process, interleaved round by round
    (the order rotating each round) so machine load hits all alike; medians."""
    ws = workspace()
    env = isolated_env(base_url, ws.work_root.parent)
    session_id = long_session(ws, SESSION_MESSAGES)
    args = {"bare": ("bare", None), "catbuddy": ("catbuddy", None), "resume": ("catbuddy", session_id),
            "new": ("catbuddy", None)}
    for kind in KINDS:  # unmeasured: the tokenizer cache is written (as on first use), files are cached
        fresh(args[kind][0], env, ws.work_root, args[kind][1])
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for round_ in range(ROUNDS):
        for offset in range(len(KINDS)):
            kind = KINDS[(round_ + offset) % len(KINDS)]
            runs[kind].append(fresh(args[kind][0], env, ws.work_root, args[kind][1]))

    def med(kind: str, mark: str) -> float:
        return statistics.median(run[mark] for run in runs[kind])

    bare = f"bare Textual app, fresh (median of {ROUNDS})"
    return [
        Figure("TUI first frame: process start → first paint", med("catbuddy", "painted"), bare,
               med("bare", "painted"), target=1.5),
        Figure("TUI first frame: app construction → first paint", med("catbuddy", "construct_to_paint"),
               bare, med("bare", "construct_to_paint"), target=1.5),
        Figure("TUI whole process: start → exit after first frame", med("catbuddy", "exit"), bare,
               med("bare", "exit")),
        Figure(f"TUI open {SESSION_MESSAGES}-message session (--resume): start → shown",
               med("resume", "shown"), f"new empty session, fresh (median of {ROUNDS})", med("new", "shown"),
               target=1.5),
    ]


async def in_process_figures(llm: ScriptedLLM, settings: Settings) -> list[Figure]:
    figures: list[Figure] = []
    latencies, streamed = await input_latency(llm, settings)
    latencies.sort()
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    print(
        f"input latency while streaming: median {statistics.median(latencies) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms "
        f"({KEYSTROKES} keys at {STREAM_TOKENS_PER_SECOND} tok/s; {streamed:,} chars streamed meanwhile)"
    )
    idle = await idle_input_latency()
    figures.append(Figure("TUI key → prompt while a reply streams (median)", statistics.median(latencies) * 1000,
                          "same, bare TextArea idle", statistics.median(idle) * 1000))
    if quick():
        return figures
    readings = await long_run_memory(llm, settings)
    base_rss = readings[0][1]
    print(f"memory over a {LONG_RUN_MESSAGES:,}-message session (resident MB, mounted blocks):")
    for count, rss, blocks, per_turn in readings:
        print(f"  {count:>5,} messages: {rss:7.1f} MB, {blocks} blocks, {per_turn:.0f} ms per turn")
    last = readings[-1]
    figures.append(Figure(f"TUI resident memory at {last[0]:,} messages", last[1], "same run at 500 messages",
                          base_rss, unit="MB"))
    figures.append(Figure(f"TUI ms per turn near {last[0]:,} messages", last[3], "same run near 500 messages",
                          readings[0][3]))
    return figures


async def idle_input_latency() -> list[float]:
    """The baseline for input latency: the same key posting into a bare app's TextArea, nothing streaming."""
    app = BareApp()
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        area = app.query_one(TextArea)
        area.focus()
        await pilot.pause()
        for index in range(KEYSTROKES):
            pressed = time.perf_counter()
            app.post_message(events.Key("x", "x"))
            while area.text != "x" * (index + 1):
                await asyncio.sleep(0.001)
            latencies.append(time.perf_counter() - pressed)
            await asyncio.sleep(0.05)
    return latencies


async def main() -> int:
    compile_catbuddy()  # fresh processes run from bytecode, as an installed copy does (bench/_fresh.py)
    # In process too, catbuddy's own places (the tokenizer cache) go to a temporary home.
    os.environ["CATBUDDY_HOME"] = str(Path(tempfile.mkdtemp(prefix="bench-tui-home-")).resolve())
    with ScriptedLLM([]) as llm:
        settings = Settings(model="scripted", base_url=llm.base_url, api_key="bench", max_retries=0)
        figures = fresh_process_figures(llm.base_url)
        figures += await in_process_figures(llm, settings)
    return 0 if report("bench_tui", figures) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
