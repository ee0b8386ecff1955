"""Start-up of the commands that must stay light, against baselines measured in the same run.

    python bench/bench_startup.py

`catbuddy --help`, `count` and `context` must not import openai or textual; `run` pays for openai
once, against the scripted server. Baselines: a bare `python -c pass`, and `import openai` alone.
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

from _table import print_table  # noqa: E402

from catbuddy.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402

REPEAT = 5
CATBUDDY = [sys.executable, "-m", "catbuddy.cli"]


def wall(cmd: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> float:
    samples = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, cwd=cwd, input=stdin, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"{cmd} failed: {done.stderr}")
    return statistics.median(samples) * 1000


def heavy_modules(cmd: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], env=env, cwd=cwd, capture_output=True, text=True)
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    return ", ".join(sorted(loaded & {"openai", "textual", "mcp", "httpx"})) or "none"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        env = {**os.environ, "CATBUDDY_HOME": str(Path(tmp) / "home")}
        subprocess.run([*CATBUDDY, "init"], env=env, cwd=root, capture_output=True, check=True)
        request = json.dumps({"messages": [{"role": "user", "content": "hello " * 200}]})
        rows = []
        baseline = wall([sys.executable, "-c", "pass"], env, root)
        openai_ms = wall([sys.executable, "-c", "import openai"], env, root)
        rows.append(["python -c pass (baseline)", round(baseline), 1.0, ""])
        rows.append(["python -c 'import openai'", round(openai_ms), round(openai_ms / baseline, 1), "openai"])
        cases = [
            ("catbuddy --help", [*CATBUDDY, "--help"], None),
            ("catbuddy count -", [*CATBUDDY, "count", "-"], request),
            ("catbuddy context", [*CATBUDDY, "context", "--no-mcp"], None),
        ]
        for name, cmd, stdin in cases:
            ms = wall(cmd, env, root, stdin)
            rows.append([name, round(ms), round(ms / baseline, 1), heavy_modules(cmd, env, root)])
        with ScriptedLLM([Reply.text("hi")] * (REPEAT + 1)) as llm:
            run_env = {**env, "OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "x", "CATBUDDY_MODEL": "scripted"}
            ms = wall([*CATBUDDY, "run", "say hi"], run_env, root)
            rows.append(["catbuddy run (scripted reply)", round(ms), round(ms / baseline, 1), "openai (needed)"])
        print_table(
            f"Start-up, median wall ms of {REPEAT} runs (subprocesses)",
            ["command", "ms", "× baseline", "heavy modules imported"],
            rows,
        )


if __name__ == "__main__":
    main()
