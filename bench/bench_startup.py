"""Start-up of the commands that must stay light, against baselines measured in the same run.

    python bench/bench_startup.py [--quick]

Every figure is a fresh process, timed from spawn (median of several), beside a floor measured the
same way in the same run:

- `catbuddy run`: time to its first request (when the scripted server, in this process, receives it),
  against the floor `import openai` + loading the tokenizer in a fresh process. Target: ≤ floor + 0.15 s.
  A new session's first request is provably small, so it goes out before any tokenizer loads
  (docs/architecture.md §3, "The first request"): the figure can be below the floor. It is also shown
  beside `import openai` alone (information: what catbuddy's own set-up costs on top of the SDK).
- `catbuddy run` whole, to exit: beside a bare script that imports the SDK, streams the same scripted reply
  from the same server and prints it (information: the least any client of the SDK can do).
- `catbuddy --help`: ≤ 0.15 s (beside a bare `python -c pass`).
- `catbuddy count -`: ≤ 1.2× the bare tokenizer floor (a fresh process that loads tiktoken from the same
  files and counts the same input).
- `catbuddy context`: shown beside `python -c pass`, for information.

`--help`, `count` and `context` must not import openai or textual (checked with ``-X importtime``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fresh import compile_catbuddy  # noqa: E402
from _table import Figure, exit_status, print_table, quick, report  # noqa: E402

from catbuddy.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402

REPEAT = 5 if quick() else 11
CATBUDDY = [sys.executable, "-m", "catbuddy.cli"]
HEAVY = {"openai", "textual", "mcp", "httpx"}
RUN_TARGET_S = 0.15  # above the floor
HELP_TARGET_S = 0.15
COUNT_TARGET_RATIO = 1.2
OPENAI_AND_TOKENIZER = "import openai\nfrom catbuddy.context.counting.encodings import load_encoding\nload_encoding('o200k_base')\n"
# The least a client of the same server can do: the SDK, one streamed reply printed, exit.
BARE_REPLY = (
    "import os, openai\nclient = openai.OpenAI(base_url=os.environ['OPENAI_BASE_URL'], api_key='x')\n"
    "stream = client.chat.completions.create(model='scripted', stream=True,\n"
    "    messages=[{'role': 'user', 'content': 'say hi'}])\n"
    "print(''.join(c.choices[0].delta.content or '' for c in stream if c.choices))\n"
)
BARE_COUNT = (
    "import json, sys\nfrom catbuddy.context.counting.encodings import load_encoding\n"
    "request = json.loads(sys.stdin.read())\nencoding = load_encoding('o200k_base')\n"
    "print(sum(len(encoding.encode(m['content'])) for m in request['messages']))\n"
)


def once(cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd} failed: {done.stderr}")
    return elapsed


def first_request(llm: ScriptedLLM, cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds from spawning ``cmd`` until the scripted server has received its first request."""
    before = len(llm.requests)
    start = time.perf_counter()
    process = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while len(llm.requests) == before:
        if process.poll() is not None:
            raise SystemExit(f"{cmd} exited before its first request: {process.stderr and process.stderr.read()}")
        time.sleep(0.0005)
    elapsed = time.perf_counter() - start
    process.communicate(timeout=60)
    return elapsed


def heavy_modules(cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *cmd[1:]], env=env, cwd=cwd, input=stdin, capture_output=True, text=True
    )
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    return sorted(loaded & HEAVY)


def main() -> int:
    compile_catbuddy()  # as installed: bytecode in place (bench/_fresh.py)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        env = {**os.environ, "CATBUDDY_HOME": str(Path(tmp) / "home")}
        subprocess.run([*CATBUDDY, "init"], env=env, cwd=root, capture_output=True, check=True)
        request = json.dumps({"messages": [{"role": "user", "content": "hello " * 200}]})

        python_cmd = [sys.executable, "-c", "pass"]
        cases = {  # each figure and its floor run in interleaved rounds, so load hits both alike
            "python": (python_cmd, None),
            "openai": ([sys.executable, "-c", "import openai"], None),
            "floor_run": ([sys.executable, "-c", OPENAI_AND_TOKENIZER], None),
            "floor_count": ([sys.executable, "-c", BARE_COUNT], request),
            "help": ([*CATBUDDY, "--help"], None),
            "count": ([*CATBUDDY, "count", "-"], request),
            "context": ([*CATBUDDY, "context", "--no-mcp"], None),
        }
        heavy = {
            "catbuddy --help": heavy_modules([*CATBUDDY, "--help"], env, root),
            "catbuddy count -": heavy_modules([*CATBUDDY, "count", "-"], env, root, request),
            "catbuddy context": heavy_modules([*CATBUDDY, "context", "--no-mcp"], env, root),
        }
        samples: dict[str, list[float]] = {name: [] for name in [*cases, "to_request", "run", "bare_reply"]}
        with ScriptedLLM([Reply.text("hi")] * (3 * REPEAT + 3)) as llm:
            run_env = {**env, "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "x", "CATBUDDY_MODEL": "scripted"}
            run_cmd = [*CATBUDDY, "run", "say hi"]
            for cmd, stdin in cases.values():  # unmeasured: page cache, the tokenizer's marshal cache
                once(cmd, env, root, stdin)
            bare_reply = [sys.executable, "-c", BARE_REPLY]
            first_request(llm, run_cmd, run_env, root)
            once(bare_reply, run_env, root)
            for _ in range(REPEAT):
                for name, (cmd, stdin) in cases.items():
                    samples[name].append(once(cmd, env, root, stdin))
                samples["to_request"].append(first_request(llm, run_cmd, run_env, root))
                samples["run"].append(once(run_cmd, run_env, root))
                samples["bare_reply"].append(once(bare_reply, run_env, root))
        median = {name: statistics.median(values) for name, values in samples.items()}
        python, openai_s, floor_run, floor_count = (median[k] for k in ("python", "openai", "floor_run", "floor_count"))
        help_s, count_s, context_s = median["help"], median["count"], median["context"]
        to_request, run_s, bare_reply_s = median["to_request"], median["run"], median["bare_reply"]

    def ms(seconds: float) -> int:
        return round(seconds * 1000)

    print_table(
        f"Start-up, median wall ms of {REPEAT} fresh processes",
        ["command", "ms", "× python -c pass", "heavy modules imported"],
        [
            ["python -c pass", ms(python), 1.0, ""],
            ["python -c 'import openai'", ms(openai_s), round(openai_s / python, 1), "openai"],
            ["floor: import openai + tokenizer", ms(floor_run), round(floor_run / python, 1), "openai"],
            ["floor: tokenizer + count the input", ms(floor_count), round(floor_count / python, 1), ""],
            ["catbuddy --help", ms(help_s), round(help_s / python, 1), ", ".join(heavy["catbuddy --help"]) or "none"],
            ["catbuddy count -", ms(count_s), round(count_s / python, 1), ", ".join(heavy["catbuddy count -"]) or "none"],
            ["catbuddy context", ms(context_s), round(context_s / python, 1),
             ", ".join(heavy["catbuddy context"]) or "none"],
            ["catbuddy run: first request", ms(to_request), round(to_request / python, 1), "openai (needed)"],
            ["catbuddy run: to exit (scripted reply)", ms(run_s), round(run_s / python, 1), "openai (needed)"],
            ["bare SDK script: one streamed reply", ms(bare_reply_s), round(bare_reply_s / python, 1), "openai"],
        ],
    )  # fmt: skip
    figures = [
        Figure(f"`catbuddy run` to first request (target: floor + {RUN_TARGET_S:g} s)", to_request,
               "floor: import openai + tokenizer", floor_run, unit="s", target=round(floor_run + RUN_TARGET_S, 2),
               kind="value"),
        Figure("`catbuddy run` to first request, beside the SDK import alone", to_request,
               "python -c 'import openai'", openai_s, unit="s"),
        Figure("`catbuddy run`, whole (one streamed reply)", run_s, "bare SDK script, same reply", bare_reply_s,
               unit="s"),
        Figure("`catbuddy --help`", help_s, "python -c pass", python, unit="s", target=HELP_TARGET_S, kind="value"),
        Figure("`catbuddy count -`", count_s, "floor: tokenizer + count the input", floor_count, unit="s",
               target=COUNT_TARGET_RATIO),
        Figure("`catbuddy context`", context_s, "python -c pass", python, unit="s"),
        Figure("openai/textual/mcp/httpx imported by --help, count, context",
               float(sum(len(found) for found in heavy.values())), "modules that must not be", 0.0, unit="",
               target=0, kind="value"),
    ]  # fmt: skip
    return exit_status(report("bench_startup", figures))


if __name__ == "__main__":
    raise SystemExit(main())
