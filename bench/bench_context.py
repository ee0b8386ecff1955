"""Prompt assembly and token counting (issue 2 targets).

    python bench/bench_context.py

1. ContextBuilder.build on a cache miss and on a hit, with 8 workspace files and 20 skills.
   Targets: hit ≤ 0.2 ms median, and ≥ 50× faster than a miss.
2. Counting throughput of TokenCounter against raw ``tiktoken`` ``encode`` on the same text.
   Target: ≥ 0.8× raw.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import Figure, exit_status, print_table, quick, report  # noqa: E402

from catbuddy.config import Settings  # noqa: E402
from catbuddy.context.assembly.builder import ContextBuilder  # noqa: E402
from catbuddy.context.counting.encodings import load_encoding  # noqa: E402
from catbuddy.context.counting.tokens import TokenCounter  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

SKILLS = 20
HIT_TARGET_MS = 0.2
MISS_OVER_HIT_TARGET = 50
COUNT_RATIO_TARGET = 0.8


def make_workspace(root: Path) -> Workspace:
    workspace = Workspace(work_root=root / "project", home=root / "home")
    workspace.work_root.mkdir(parents=True)
    workspace.ensure_home()
    workspace.init_project()  # AGENTS, SOUL, USER, TOOLS, MEMORY
    (workspace.project_memory).write_text("# Project Memory\n\n- 2026-11-30: tests run with `pytest -q`\n" * 5)
    (workspace.global_memory).write_text("# Memory\n\n- prefers concise answers\n" * 5)
    (workspace.project_dir / "config.toml").write_text('approval = "ask"\n')
    for i in range(SKILLS):
        folder = workspace.project_skills_dir / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        body = "\n".join(f"Step {n}: do something useful with the project." for n in range(30))
        always = "always: true\n" if i < 2 else ""
        (folder / "SKILL.md").write_text(f"---\nname: skill-{i:02d}\ndescription: Skill number {i}\n{always}---\n{body}\n")
    return workspace


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def bench_builder() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = make_workspace(Path(tmp))
        builder = ContextBuilder(workspace, Settings())
        builder.build("tui")

        def miss() -> None:
            builder._cache.clear()  # what an edit to any watched file causes
            builder.build("tui")

        miss_ms = statistics.median(timed(miss, 50 if quick() else 200)) * 1000
        hit_ms = statistics.median(timed(lambda: builder.build("tui"), 1000 if quick() else 5000)) * 1000
        ratio = miss_ms / hit_ms
        print_table(
            "ContextBuilder.build (8 workspace files, 20 skills)",
            ["case", "median ms", "target", "ok"],
            [
                ["miss (assemble)", round(miss_ms, 3), "", ""],
                ["hit (fingerprint only)", round(hit_ms, 4), f"≤ {HIT_TARGET_MS} ms", hit_ms <= HIT_TARGET_MS],
                ["miss / hit", round(ratio, 1), f"≥ {MISS_OVER_HIT_TARGET}×", ratio >= MISS_OVER_HIT_TARGET],
            ],
        )
    miss_name = "the same build on a cache miss"
    return [
        Figure("ContextBuilder.build, cache hit", hit_ms, miss_name, miss_ms, target=HIT_TARGET_MS, kind="value"),
        Figure("ContextBuilder.build, hit vs miss", hit_ms, miss_name, miss_ms, target=1 / MISS_OVER_HIT_TARGET),
    ]


def sample_texts(n: int) -> list[str]:
    rng = random.Random(7)
    english = "The quick brown fox jumps over the lazy dog while the build runs. "
    chinese = "上下文工程决定了模型每次开口之前看到什么。"
    code = "def handler(event, context):\n    return {'status': 200, 'body': json.dumps(event)}\n"
    parts = [english, chinese, code]
    return ["".join(rng.choice(parts) for _ in range(rng.randint(5, 60))) + str(i) for i in range(n)]


def bench_counting() -> list[Figure]:
    texts = sample_texts(2000)
    encoding = load_encoding("o200k_base")
    total_chars = sum(len(t) for t in texts)

    def raw() -> None:
        for text in texts:
            len(encoding.encode(text))

    def ours() -> None:
        counter = TokenCounter("o200k_base")  # a fresh cache: every message is new
        counter.load()  # steady state: the Rust encoder (built once above); start-up is bench_startup's
        for text in texts:
            counter.count_message({"role": "user", "content": text})

    raw_s = statistics.median(timed(raw, 7))
    ours_s = statistics.median(timed(ours, 7))
    ratio = raw_s / ours_s
    print_table(
        f"Counting {len(texts):,} new messages ({total_chars:,} characters, English/Chinese/code)",
        ["counter", "median ms", "MB/s", "throughput vs raw", "target", "ok"],
        [
            ["raw tiktoken encode", round(raw_s * 1000, 2), round(total_chars / raw_s / 1e6, 2), 1.0, "", ""],
            [
                "TokenCounter.count_message",
                round(ours_s * 1000, 2),
                round(total_chars / ours_s / 1e6, 2),
                round(ratio, 2),
                f"≥ {COUNT_RATIO_TARGET}×",
                ratio >= COUNT_RATIO_TARGET,
            ],
        ],
    )
    # throughput ≥ 0.8× raw is time ≤ 1 / 0.8 = 1.25× raw
    return [Figure(f"TokenCounter.count_message, {len(texts):,} new messages", ours_s * 1000,
                   "raw tiktoken encode, same texts", raw_s * 1000, target=1 / COUNT_RATIO_TARGET)]  # fmt: skip


def main() -> int:
    figures = bench_builder()
    print()
    figures += bench_counting()
    return exit_status(report("bench_context", figures))


if __name__ == "__main__":
    raise SystemExit(main())
