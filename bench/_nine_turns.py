"""The 9-turn tool-heavy session of issue 11: `catbuddy run --continue` per turn, three `read_file` calls a turn.

Used by bench_cache.py (and the tests drive the same session): each turn is a fresh process on the same
session, so anything a process remembers, rather than derives from the stored history, shows up as a
broken prefix on the next turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from catbuddy.testing.scripted_llm import Reply, ScriptedLLM

TURNS = 9
READS_PER_TURN = 3
FILE_LINES = 66  # ~900 tokens a file, as the session had


def make_project(root: Path) -> list[str]:
    names = []
    for number in range(TURNS * READS_PER_TURN):
        name = f"module_{number:02d}.py"
        lines = [f"def function_{number}_{line}(value: int) -> int:  # step {line}" for line in range(FILE_LINES // 3)]
        body = "\n".join(f"{line}\n    return value * {i} + {number}\n" for i, line in enumerate(lines))
        (root / name).write_text(body)
        names.append(name)
    return names


SUMMARY = "The user is reading the project's modules three at a time; each defines small arithmetic helpers."
CONFIG = """
[models.scripted]
context_window = {window}
max_output_tokens = 4096
"""


class TurnScript:
    """Answers each chat request with the turn's next step; a summary request gets a short summary."""

    def __init__(self) -> None:
        self.steps: list[Reply | Any] = []

    def turn(self, names: list[str]) -> None:
        self.steps = [Reply.tool_call("read_file", {"path": name}) for name in names]
        self.steps.append(Reply.text("I read " + ", ".join(names) + "; they define small arithmetic helpers."))

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("tool_choice") == "none" or not body.get("stream"):
            return Reply.text(SUMMARY)
        return self.steps.pop(0)


def run_session(
    extra_env: dict[str, str] | None = None, turns: int = TURNS, window: int = 128_000
) -> tuple[ScriptedLLM, Path]:
    """Run the session; returns the (closed) server with its recorded requests, and the home used."""
    work = Path(tempfile.mkdtemp(prefix="cb-nine-"))
    project, home = work / "project", work / "home"
    project.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(CONFIG.format(window=window))
    names = make_project(project)
    script = TurnScript()
    env = {
        **os.environ,
        "CATBUDDY_HOME": str(home),
        "CATBUDDY_MODEL": "scripted",
        "OPENAI_API_KEY": "test-key",
        "CATBUDDY_APPROVAL": "yolo",
        **(extra_env or {}),
    }
    with ScriptedLLM([script] * (turns * (READS_PER_TURN + 3))) as llm:
        env["OPENAI_BASE_URL"] = llm.base_url
        for turn in range(turns):
            script.turn(names[turn * READS_PER_TURN : (turn + 1) * READS_PER_TURN])
            args = [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run"]
            if turn:
                args.append("--continue")
            args.append(f"Turn {turn + 1}: read the next three modules and tell me what they do.")
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise RuntimeError(f"turn {turn + 1} failed ({done.returncode}): {done.stderr[-2000:]}")
    return llm, home


def bodies_and_tokens(llm: ScriptedLLM) -> tuple[list[dict[str, Any]], list[int]]:
    served = [r for r in llm.requests if r.prompt_tokens is not None and r.outcome in ("streamed", "completed")]
    return [r.body for r in served], [int(r.prompt_tokens or 0) for r in served]
