"""Per-turn cost of context governance, steady state, against a naive recount of every message.

Run: ``python bench/bench_governance.py``. Histories of 100, 1,000 and 5,000 messages (user turns,
assistant tool calls, tool results of 200–20,000 characters in English, Chinese and code) are built
with a seeded random, so every run governs the same data. After a warm-up call, each turn appends one
message and governs the whole history again — what the agent loop does before every LLM call. The
naive version is the same code with a fresh TokenCounter (no per-message cache) each turn.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import print_table  # noqa: E402

from catbuddy.context.governor import Budget, FixedPart, GovernanceReport, govern_context  # noqa: E402
from catbuddy.context.tokens import TokenCounter  # noqa: E402

SEED = 20240601
ENCODING = "o200k_base"
SIZES = (100, 1_000, 5_000)
TURNS = 50  # measured turns for the cached version
NAIVE_TURNS = {100: 20, 1_000: 5, 5_000: 2}  # the naive recount is slow; fewer turns are enough
MAIN_WINDOW = (128_000, 16_384)  # gpt-4o
SMALL_WINDOW = (32_768, 4_096)  # a local model
TARGET_MS_AT_1000 = 5.0
TARGET_SPEEDUP_AT_1000 = 20.0

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


def run(size: int, window: tuple[int, int], naive: bool) -> Measured:
    """Per steady-state turn timings (wall clock), the last report, and the history's raw tokens."""
    rng = random.Random(SEED)
    fixed = fixed_part(rng)
    stream = conversation(rng)
    history = [next(stream) for _ in range(size)]
    budget = Budget(*window)
    counter = TokenCounter(ENCODING)
    report = govern_context(history, fixed, budget, counter).report  # warm-up: counts everything once
    cpu, wall = [], []
    for _ in range(NAIVE_TURNS[size] if naive else TURNS):
        history.append(next(stream))
        if naive:
            counter = TokenCounter(ENCODING)
        start, start_cpu = time.perf_counter(), time.process_time()
        report = govern_context(history, fixed, budget, counter).report
        cpu.append((time.process_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return Measured(
        statistics.median(cpu), statistics.median(wall), report, report.tokens_before - report.fixed_tokens
    )


def main() -> int:
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
    speedups: dict[int, float] = {}
    medians: dict[int, float] = {}
    for size in SIZES:
        cached = run(size, MAIN_WINDOW, naive=False)
        naive = run(size, MAIN_WINDOW, naive=True)
        medians[size] = cached.median_ms
        speedups[size] = naive.median_ms / cached.median_ms
        report = cached.report
        rows.append(
            [
                size,
                cached.history_tokens,
                report.tokens_after,
                report.microcompacted,
                report.messages_snipped,
                report.results_truncated,
                round(cached.median_ms, 2),
                round(cached.wall_ms, 2),
                round(naive.median_ms, 1),
                f"{speedups[size]:,.0f}x",
            ]
        )
    print_table(
        f"Context governance per turn, window {MAIN_WINDOW[0]:,} (max output {MAIN_WINDOW[1]:,}); "
        f"median CPU ms of {TURNS} steady-state turns, one new message each",
        [*headers, "naive ms/turn", "speed-up"],
        rows,
    )

    small = []
    for size in SIZES:
        cached = run(size, SMALL_WINDOW, naive=False)
        report = cached.report
        small.append(
            [
                size,
                cached.history_tokens,
                report.tokens_after,
                report.microcompacted,
                report.messages_snipped,
                report.results_truncated,
                round(cached.median_ms, 2),
                round(cached.wall_ms, 2),
            ]
        )
    print_table(
        f"Same histories, window {SMALL_WINDOW[0]:,} (max output {SMALL_WINDOW[1]:,})", headers, small
    )

    ms, speedup = medians[1_000], speedups[1_000]
    ok = ms <= TARGET_MS_AT_1000 and speedup >= TARGET_SPEEDUP_AT_1000
    print(f"load average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"1,000 messages: {ms:.2f} ms CPU per turn (target <= {TARGET_MS_AT_1000} ms), "
        f"{speedup:,.0f}x faster than the naive recount (target >= {TARGET_SPEEDUP_AT_1000:.0f}x): "
        + ("OK" if ok else "MISSED")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
