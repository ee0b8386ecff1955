"""Whole `catbuddy run` against nanobot's whole headless run (`nanobot agent -m`), on the same scripted model.

    python bench/bench_peers.py [--quick]     # nanobot from .venv-nanobot, or CATBUDDY_BENCH_NANOBOT=DIR

Two tasks, each run by both tools as fresh processes, interleaved (catbuddy, nanobot, then nanobot,
catbuddy in the next round, so neither always runs second), median of 7 per side (3 with --quick):

- chat: one user message; the model streams a ~1.5 KB Markdown reply; the process exits.
- fixbug: a project with a buggy ``stats.py``; the model reads it (each tool's read tool), fixes it
  (each tool's edit tool, in its own argument names), then streams a short reply. After every run the
  file must be fixed and the read must have shown the bug to the model, or the bench fails (exit 1):
  a run that did not do the work is never timed.

Same conditions for both: one in-process ScriptedLLM (strict: an unexpected request fails the run),
scripted with the same replies in the same chunks; each started as a user starts it (its console script,
prompt on the command line, stdin closed, cwd the project), with HOME in a fresh temp dir copied from a
prepared home — configured by its config file, its first-run set-up done by one earlier run, no
conversation kept (catbuddy: ``~/.catbuddy/config.toml`` with ``approval = "auto-edit"``, as nanobot
never asks before an edit; nanobot: see ``_peers_nanobot.py``). The environment is the bench's minus
OPENAI_*/CATBUDDY_*/NANOBOT_*/XDG_*/PYTHON*, and catbuddy is byte-compiled first (``_fresh.py``): both
run from bytecode, as a copy installed from a wheel does.

Figures: each task's whole-run wall time, catbuddy against nanobot measured in the same run (target
≤ 0.5×), and, for information, the time to the first request (when the server received it). Without a
nanobot venv (``_peers_nanobot.nanobot_venv``), or when its nanobot does not run, the figures read
"unavailable".
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peers_nanobot as nanobot  # noqa: E402
from _fresh import compile_catbuddy  # noqa: E402
from _table import Figure, exit_status, print_table, quick, report, unavailable  # noqa: E402

from catbuddy.testing.scripted_llm import RecordedRequest, Reply, ReplySpec, ScriptedLLM  # noqa: E402

BENCH = "bench_peers"
REPEAT = 3 if quick() else 7
TARGET_RATIO = 0.5  # whole run, catbuddy / nanobot
RUN_TIMEOUT_S = 120.0
FINISH_WAIT_S = 5.0  # for the server thread to close its last record after the client exited
MODEL = "scripted"
API_KEY = "bench-key"
CHUNK_SIZE = 16  # characters per streamed delta, for both tools alike
STRIPPED_ENV = ("OPENAI_", "CATBUDDY_", "NANOBOT_", "XDG_", "PYTHON")
CATBUDDY_STATE_DIRS = (".catbuddy/projects",)  # sessions and memory entries: a conversation's state
MARKER = "Kettle-7731"  # in every final reply: the run printed what the model said

CHAT_PROMPT = "In a few paragraphs: what is a context window, and why do long sessions need governing?"
CHAT_REPLY = (
    f"{MARKER}: a **context window** is the number of tokens a model can read in one request: the system "
    "prompt, the tools it may call, every message so far and room for its answer.\n\n"
    "## Why long sessions need governing\n\n"
    "Every turn adds messages, and tool results are the largest of them: a file read, a test log, a long "
    "diff. Sent unchanged, the history grows until a request no longer fits and the provider refuses it.\n\n"
    "- **Old tool results** can be shortened once the work moved on; the model keeps a note of what they "
    "said.\n"
    "- **Compaction** replaces the oldest turns with a summary that keeps the decisions and open "
    "questions.\n"
    "- **The budget** is checked before every request, not after a refusal.\n\n"
    "```python\n"
    "def fits(prompt_tokens: int, window: int, reserved: int) -> bool:\n"
    "    return prompt_tokens + reserved <= window\n"
    "```\n\n"
    "Done well, the model sees what it needs, the request stays small and cheap, and a session can run "
    "for days without ever hitting the limit. Done badly, it forgets the task halfway through."
)
FIX_FILE = "stats.py"
BUG_LINE = "    return sum(values) / (len(values) - 1)"
FIX_LINE = "    return sum(values) / len(values)"
BUGGY = f'''"""Small statistics helpers."""

from __future__ import annotations


def mean(values: list[float]) -> float:
    """The arithmetic mean of a non-empty list."""
    if not values:
        raise ValueError("mean() of an empty list")
{BUG_LINE}


def spread(values: list[float]) -> float:
    """The largest value minus the smallest."""
    return max(values) - min(values)
'''
FIXED = BUGGY.replace(BUG_LINE, FIX_LINE)
FIX_PROMPT = f"mean() in {FIX_FILE} gives the wrong answer for [1, 2, 3]. Fix it."
FIX_REPLY = f"{MARKER}: fixed. mean() divided by len(values) - 1; it now divides by len(values), so [1, 2, 3] gives 2."


class RunFailed(Exception):
    """A run that did not do its task: the bench stops, loudly, instead of timing it."""


@dataclass(frozen=True)
class Side:
    """One tool, as the bench starts, configures and scripts it."""

    name: str
    command: Callable[[str], list[str]]
    configure: Callable[[Path, str], object]  # (home, base_url): write its config file under HOME
    read_tool: str
    edit_tool: str
    edit_arguments: Callable[[Path, str, str], dict[str, str]]  # (path, old, new) in its own names
    state_dirs: tuple[str, ...]  # under HOME: a conversation's state, left out of the prepared home


def catbuddy_side() -> Side:
    executable = Path(sys.executable).parent / "catbuddy"  # the console script of this venv
    if not executable.is_file():
        found = shutil.which("catbuddy")
        if found is None:
            raise SystemExit(f"{BENCH}: no catbuddy console script beside {sys.executable} or on PATH")
        executable = Path(found)

    def configure(home: Path, base_url: str) -> Path:
        path = home / ".catbuddy" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f'model = "{MODEL}"\nbase_url = "{base_url}"\napi_key = "{API_KEY}"\napproval = "auto-edit"\n',
            encoding="utf-8",
        )
        return path

    return Side(
        "catbuddy", lambda prompt: [str(executable), "run", prompt], configure, "read_file", "edit_file",
        lambda path, old, new: {"path": str(path), "old_string": old, "new_string": new}, CATBUDDY_STATE_DIRS,
    )  # fmt: skip


def nanobot_side(found: nanobot.Nanobot) -> Side:
    return Side(
        "nanobot", found.command,
        lambda home, base_url: nanobot.write_config(home, base_url, MODEL, API_KEY),
        nanobot.READ_TOOL, nanobot.EDIT_TOOL, nanobot.edit_arguments, nanobot.STATE_DIRS,
    )  # fmt: skip


@dataclass
class Run:
    side: str
    task: str
    returncode: int
    stdout: str
    stderr: str
    wall: float  # seconds from spawn to exit
    first_request: float | None  # seconds from spawn until the server received the first request
    requests: list[RecordedRequest]
    scripted: int  # replies in the script
    remaining: int  # replies left unused


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    script: Callable[[Side, Path], list[ReplySpec]]  # (side, file to fix) → the model's replies
    check: Callable[[Path, Run], list[str]]  # (file to fix, run) → what went wrong

    def problems(self, target: Path, run: Run) -> list[str]:
        found = []
        if run.returncode != 0:
            found.append(f"exit status {run.returncode}")
        if len(run.requests) != run.scripted or run.remaining:
            found.append(f"{len(run.requests)} requests for {run.scripted} scripted replies")
        outcomes = [r.outcome for r in run.requests]
        if any(outcome != "streamed" for outcome in outcomes):
            found.append(f"request outcomes {outcomes}")
        if MARKER not in run.stdout:
            found.append("the final reply is not on stdout")
        return found + self.check(target, run)


def chat_script(side: Side, target: Path) -> list[ReplySpec]:
    return [Reply.text(CHAT_REPLY, chunk_size=CHUNK_SIZE)]


def chat_check(target: Path, run: Run) -> list[str]:
    return [] if target.read_text(encoding="utf-8") == BUGGY else [f"{target.name} changed in a chat"]


def fix_script(side: Side, target: Path) -> list[ReplySpec]:
    return [
        Reply.tool_call(side.read_tool, {"path": str(target)}, chunk_size=CHUNK_SIZE),
        Reply.tool_call(
            side.edit_tool, side.edit_arguments(target, BUG_LINE, FIX_LINE), chunk_size=CHUNK_SIZE
        ),
        Reply.text(FIX_REPLY, chunk_size=CHUNK_SIZE),
    ]


def fix_check(target: Path, run: Run) -> list[str]:
    found = []
    if target.read_text(encoding="utf-8") != FIXED:
        found.append(f"{target.name} is not fixed")
    shown = [r.messages[-1] for r in run.requests[1:2]]
    if not shown or shown[0].get("role") != "tool" or BUG_LINE.strip() not in str(shown[0].get("content")):
        found.append("the read's result did not show the buggy line to the model")
    return found


CHAT = Task("chat", CHAT_PROMPT, chat_script, chat_check)
FIXBUG = Task("fixbug", FIX_PROMPT, fix_script, fix_check)
TASKS = (CHAT, FIXBUG)


@dataclass
class Bench:
    """A temp root (the project, prepared homes, per-run homes) and the one scripted server."""

    root: Path
    llm: ScriptedLLM
    tiktoken_cache: Path
    templates: dict[str, Path] = field(default_factory=dict)
    count: int = 0

    @property
    def project(self) -> Path:
        return self.root / "project"  # one path for every run: the tools key project state by it

    def reset_project(self) -> Path:
        shutil.rmtree(self.project, ignore_errors=True)
        self.project.mkdir(parents=True)
        target = self.project / FIX_FILE
        target.write_text(BUGGY, encoding="utf-8")
        return target

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(STRIPPED_ENV)}
        return {**env, "HOME": str(home), "TIKTOKEN_CACHE_DIR": str(self.tiktoken_cache)}

    def execute(self, side: Side, task: Task, home: Path) -> Run:
        """One fresh process of ``side`` doing ``task`` with HOME=``home``; RunFailed if it did not."""
        target = self.reset_project()
        script = task.script(side, target)
        self.llm.clear_script()
        self.llm.clear_requests()
        self.llm.push(*script)
        start = time.perf_counter()
        process = subprocess.Popen(
            side.command(task.prompt), cwd=self.project, env=self.env(home), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
        )  # fmt: skip
        try:
            stdout, stderr = process.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            raise RunFailed(
                f"{side.name} {task.name}: no exit within {RUN_TIMEOUT_S:g} s\n{stderr[-2000:]}"
            ) from None
        wall = time.perf_counter() - start
        requests = self.llm.requests
        for request in requests:
            request.finished.wait(FINISH_WAIT_S)
        first = requests[0].received - start if requests else None
        run = Run(side.name, task.name, process.returncode, stdout, stderr, wall, first, requests, len(script),
                  self.llm.remaining)  # fmt: skip
        problems = task.problems(target, run)
        if problems:
            raise RunFailed(
                f"{side.name} {task.name} did not do the work: {'; '.join(problems)}\n"
                f"--- stdout\n{stdout[-2000:]}\n--- stderr\n{stderr[-2000:]}"
            )
        return run

    def prepare(self, side: Side) -> Path:
        """The home a user has after one earlier run: configured, first-run set-up done, no conversation."""
        home = self.root / "prepared" / side.name
        home.mkdir(parents=True)
        side.configure(home, self.llm.base_url)
        self.execute(side, CHAT, home)
        for state in side.state_dirs:
            shutil.rmtree(home / state, ignore_errors=True)
        self.templates[side.name] = home
        return home

    def run(self, side: Side, task: Task) -> Run:
        """``task`` by ``side`` in a fresh copy of its prepared home (the copy is not timed)."""
        template = self.templates.get(side.name) or self.prepare(side)
        self.count += 1
        home = self.root / "runs" / f"{self.count:03d}-{side.name}-{task.name}"
        shutil.copytree(template, home, symlinks=True)
        try:
            return self.execute(side, task, home)
        finally:
            shutil.rmtree(home, ignore_errors=True)


def measure(bench: Bench, sides: Sequence[Side], repeat: int) -> dict[tuple[str, str], list[Run]]:
    """Warm-up (untimed), then ``repeat`` interleaved rounds; the side that goes first alternates."""
    for task in TASKS:
        for side in sides:
            bench.run(side, task)
    runs: dict[tuple[str, str], list[Run]] = {(t.name, s.name): [] for t in TASKS for s in sides}
    for round_no in range(repeat):
        for task in TASKS:
            for side in sides if round_no % 2 == 0 else list(reversed(sides)):
                runs[task.name, side.name].append(bench.run(side, task))
    return runs


def median(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def figures(runs: dict[tuple[str, str], list[Run]]) -> list[Figure]:
    found = []
    for task in TASKS:
        ours, peer = runs[task.name, "catbuddy"], runs[task.name, "nanobot"]
        found.append(Figure(f"{task.name}: whole `catbuddy run`", median([r.wall for r in ours]),
                            "whole `nanobot agent -m`", median([r.wall for r in peer]), unit="s",
                            target=TARGET_RATIO))  # fmt: skip
        found.append(Figure(f"{task.name}: `catbuddy run` to first request", median([r.first_request for r in ours]),
                            "nanobot to first request", median([r.first_request for r in peer]), unit="s"))  # fmt: skip
    return found


def print_runs(runs: dict[tuple[str, str], list[Run]], repeat: int) -> None:
    rows = []
    for (task, side), samples in runs.items():
        walls = [r.wall for r in samples]
        first = samples[0].requests[0]  # the same every run: same prompt, same home
        rows.append([task, side, round(median(walls), 3), round(min(walls), 3), round(max(walls), 3),
                     round(median([r.first_request for r in samples]), 3), len(samples[0].requests),
                     first.prompt_tokens or 0, len(first.tools)])  # fmt: skip
    print_table(
        f"Whole run, {repeat} fresh processes per side and task, interleaved (seconds)",
        ["task", "tool", "median", "min", "max", "first request", "requests", "1st prompt tokens", "tools"],
        rows,
    )


def main() -> int:
    found = nanobot.find_nanobot()
    if isinstance(found, str):
        unavailable(BENCH, "whole run against nanobot (chat, fixbug)", found)
        return 0
    sides = [catbuddy_side(), nanobot_side(found)]
    compile_catbuddy()  # as installed: pip byte-compiled nanobot too
    with tempfile.TemporaryDirectory(prefix="catbuddy-bench-peers-") as tmp, ScriptedLLM(strict=True) as llm:
        bench = Bench(Path(tmp), llm, Path(tmp) / "tiktoken")
        seeded = nanobot.seed_tiktoken_cache(bench.tiktoken_cache)
        print(f"{found.version} ({found.executable}); {os.cpu_count()} cores, load "
              f"{os.getloadavg()[0]:.2f}; nanobot's tokenizer: "
              f"{'cached, as after its first download' if seeded is None else f'NOT seeded ({seeded})'}")  # fmt: skip
        try:
            runs = measure(bench, sides, REPEAT)
        except RunFailed as exc:
            print(f"{BENCH}: {exc}", file=sys.stderr)
            return 1
    print_runs(runs, REPEAT)
    return exit_status(report(BENCH, figures(runs)))


if __name__ == "__main__":
    raise SystemExit(main())
