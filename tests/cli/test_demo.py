"""`catbuddy demo`: greets on start, shows a compaction and /context changing, leaves nothing behind,
and works from an installed wheel (the script is package data)."""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from catbuddy.cli_commands.demo import FAREWELL, FIRST_MESSAGE, demo_script_path, running_demo

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "tui"))

from helpers import texts, wait_for  # noqa: E402


def quick_script(tmp_path: Path) -> Path:
    """The shipped script without its streaming delays (same replies, same options)."""
    data = json.loads(demo_script_path().read_text(encoding="utf-8"))
    for reply in data["replies"]:
        reply["delay"] = 0
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def refuses(base_url: str) -> bool:
    url = urlparse(base_url)
    try:
        socket.create_connection((url.hostname, url.port), timeout=1).close()
    except OSError:
        return True
    return False


async def test_the_demo_greets_then_compacts_and_context_shows_the_summary(tmp_path, monkeypatch) -> None:
    from catbuddy.agent import events as ev
    from catbuddy.tui.app import CatbuddyApp
    from catbuddy.tui.widgets.messages import UserBlock
    from catbuddy.tui.widgets.reply import AssistantBlock

    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    finished: list[ev.CompactionFinished] = []
    with running_demo(quick_script(tmp_path)) as demo:
        base_url, folder = demo.llm.base_url, demo.home.parent
        app = CatbuddyApp(
            demo.workspace(), demo.settings(), first_message=FIRST_MESSAGE, approval_arm_delay=0
        )
        async with app.run_test(size=(120, 40)) as pilot:
            # Nothing typed: the first message goes out for the user and the scripted model greets.
            greeting = await wait_for(
                pilot,
                lambda: [t for t in texts(app, AssistantBlock) if "/context" in t],
                timeout=10,
                what="greeting",
            )
            assert texts(app, UserBlock) == [FIRST_MESSAGE]
            assert "/context" in greeting[0] and "compact" in greeting[0]
            app.loop.add_listener(
                lambda e: finished.append(e) if isinstance(e, ev.CompactionFinished) else None
            )
            before = app.loop.context_report()
            assert before.summary_tokens == 0
            for n, text in enumerate(["show me around", "tell me more", "and then?"], start=2):
                app.prompt.load_text(text)
                await pilot.press("enter")
                await wait_for(
                    pilot,
                    lambda n=n: (
                        len(texts(app, UserBlock)) == n
                        and app.loop.state.value == "idle"
                        and app.loop._turn_task.done()
                    ),
                    timeout=10,
                    what=f"turn {n}",
                )
            after = app.loop.context_report()
            assert finished, "no compaction within three typed messages"
            assert all(e.ok and e.tokens_after < e.tokens_before for e in finished)
            assert after.summary_tokens > 0 and after.folded_messages > 0
            assert app.status.info.used == after.used  # the bar agrees with /context
    assert refuses(base_url)  # the server stopped with the demo
    assert not folder.exists()  # and its temporary folder is gone


def read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return seen


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_catbuddy_demo_in_a_terminal_greets_and_exits_cleanly(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    home = tmp_path / "home"
    env = {
        **os.environ,
        "TMPDIR": str(temp),
        "CATBUDDY_HOME": str(home),
        "TERM": "xterm-256color",
        "COLUMNS": "100",
        "LINES": "30",
    }
    env.pop("NO_COLOR", None)
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-c", "from catbuddy.cli import main; main()", "demo"],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=tmp_path,
        env=env,
        close_fds=True,
    )
    os.close(child)
    try:
        screen = read_until(main, b"scripted", timeout=30)
        assert b"scripted" in screen
        assert any(p.name.startswith("catbuddy-demo-") for p in temp.iterdir())
        time.sleep(1.0)
        os.write(main, b"\x03")
        time.sleep(0.3)
        os.write(main, b"\x03")
        output = read_until(main, b"were not touched", timeout=15)
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
        os.close(main)
    text = output.decode("utf-8", "replace")
    assert FAREWELL.splitlines()[0] in text
    assert "Press Ctrl+C to stop" not in text and "--resume" not in text
    assert list(temp.iterdir()) == []  # the temporary home and project are removed
    # The user's catbuddy home holds at most the tokenizer's speed-up cache: no config, no sessions.
    assert not home.exists() or [p.name for p in home.iterdir()] == ["cache"]


def test_the_built_wheel_ships_the_demo_script(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("catbuddy-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "catbuddy/testing/demo_script.json" in names
    assert "catbuddy/cli_commands/demo.py" in names


def test_the_readme_states_the_demos_compaction_threshold() -> None:
    # Issue 31: the README said "at half the budget" while the demo compacts at 0.68 of it.
    from catbuddy.cli_commands.demo import DEMO_COMPACT_RATIO

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    assert f"compaction at {round(DEMO_COMPACT_RATIO * 100)}% of the budget" in readme
