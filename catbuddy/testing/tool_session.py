"""A tool-heavy headless session, one `catbuddy run` process per turn, against the scripted server.

Issue 11's measurement: nine turns of three `read_file` calls each, `catbuddy run --continue` per turn,
a 128k window. Every turn is a fresh process on the same session, so anything a process remembers rather
than derives from the stored history shows up as a broken prompt prefix on the next turn. Used by
``bench/bench_cache.py`` and the tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.testing.script import Reply, ReplySpec
from catbuddy.testing.scripted_llm import ScriptedLLM

TURNS = 9
READS_PER_TURN = 3
FILE_LINES = 66  # ~900 tokens a file
TURN_TIMEOUT = 120.0
SUMMARY = "The user is reading the project's modules three at a time; each defines small arithmetic helpers."
MODEL_CONFIG = """
[models.scripted]
context_window = {window}
max_output_tokens = 4096
"""


@dataclass
class SessionShape:
    turns: int = TURNS
    reads_per_turn: int = READS_PER_TURN
    file_lines: int = FILE_LINES
    window: int = 128_000
    config: str = ""  # more config.toml text, e.g. a [context] table
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class SessionRun:
    llm: ScriptedLLM  # closed; its recorded requests remain
    home: Path
    project: Path
    outputs: list[subprocess.CompletedProcess[str]]
    first_request_of_turn: list[int]  # index into served() of each turn's first request

    def served(self) -> list[Any]:
        """The requests the server answered, in order (refused ones left out)."""
        return [r for r in self.llm.requests if r.outcome in ("streamed", "completed")]

    def bodies_and_tokens(self) -> tuple[list[dict[str, Any]], list[int]]:
        served = self.served()
        return [r.body for r in served], [int(r.prompt_tokens or 0) for r in served]


class TurnScript:
    """Answers each chat request with the turn's next step; a summary request gets a short summary."""

    def __init__(self) -> None:
        self.steps: list[ReplySpec] = []

    def turn(self, names: list[str]) -> None:
        self.steps = [Reply.tool_call("read_file", {"path": name}) for name in names]
        self.steps.append(
            Reply.text("I read " + ", ".join(names) + "; they define small arithmetic helpers.")
        )

    def __call__(self, body: dict[str, Any]) -> ReplySpec:
        if body.get("tool_choice") == "none" or not body.get("stream"):
            return Reply.text(SUMMARY)
        return self.steps.pop(0)


def make_project(root: Path, count: int, lines: int) -> list[str]:
    names = []
    for number in range(count):
        name = f"module_{number:02d}.py"
        body = "".join(
            f"def function_{number}_{line}(value: int) -> int:  # step {line}\n    return value * {line} + {number}\n\n"
            for line in range(lines // 3)
        )
        (root / name).write_text(body)
        names.append(name)
    return names


def prepare(shape: SessionShape, work: Path | None = None) -> tuple[Path, Path, list[str]]:
    work = work or Path(tempfile.mkdtemp(prefix="cb-tool-session-"))
    project, home = work / "project", work / "home"
    project.mkdir(parents=True)
    home.mkdir(parents=True)
    (home / "config.toml").write_text(MODEL_CONFIG.format(window=shape.window) + shape.config)
    return project, home, make_project(project, shape.turns * shape.reads_per_turn, shape.file_lines)


def turn_command(project: Path, turn: int, *, json_output: bool = False) -> list[str]:
    args = [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run"]
    if turn:
        args.append("--continue")
    if json_output:
        args.append("--json")
    args.append(f"Turn {turn + 1}: read the next modules and tell me what they do.")
    return args


def run_session(shape: SessionShape | None = None, *, json_output: bool = False) -> SessionRun:
    shape = shape or SessionShape()
    project, home, names = prepare(shape)
    env = {
        **os.environ,
        "CATBUDDY_HOME": str(home),
        "CATBUDDY_MODEL": "scripted",
        "OPENAI_API_KEY": "test-key",
        "CATBUDDY_APPROVAL": "yolo",
        **shape.env,
    }
    script = TurnScript()
    outputs: list[subprocess.CompletedProcess[str]] = []
    firsts: list[int] = []
    per = shape.reads_per_turn
    with ScriptedLLM([script] * (shape.turns * (per + 3))) as llm:
        env["OPENAI_BASE_URL"] = llm.base_url
        for turn in range(shape.turns):
            script.turn(names[turn * per : (turn + 1) * per])
            firsts.append(len([r for r in llm.requests if r.outcome in ("streamed", "completed")]))
            done = subprocess.run(
                turn_command(project, turn, json_output=json_output),
                env=env,
                capture_output=True,
                text=True,
                timeout=TURN_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
            outputs.append(done)
            if done.returncode != 0:
                raise RuntimeError(f"turn {turn + 1} failed ({done.returncode}): {done.stderr[-2000:]}")
    return SessionRun(llm, home, project, outputs, firsts)
