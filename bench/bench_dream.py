"""The cost of a Dream run apart from the model call, and how big memory gets over many runs.

Run: ``python bench/bench_dream.py``. The model is replaced by an instant scripted answer, so what is
timed is catbuddy's own work (docs/architecture.md §13):

1. One run over 1,000 pending entries (session digests and compaction summaries of 300–6,000
   characters) against memory files of 60 and 120 bullets: reading the journal, numbering both files,
   choosing the entries that fit ``dream_entry_tokens`` and rendering the request (``gather``); parsing,
   validating and applying the answer with both versions kept and the cursor moved (``apply``). Then
   the runs it takes to drain all 1,000 entries, and their total cost.
2. Fifty simulated runs, each trying to add 12 new facts to both files: when an answer would pass
   ``memory_max_lines`` / ``memory_max_bytes``, the simulated model merges as the retry asks (it
   rewrites older lines and deletes up to a third). The files must stay within the caps throughout.

Each figure has its target or bound and a verdict.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report  # noqa: E402

from catbuddy.config import MemorySettings, Settings  # noqa: E402
from catbuddy.context.counting.tokens import counter_for  # noqa: E402
from catbuddy.memory.document import MemoryDoc  # noqa: E402
from catbuddy.memory.dream import DreamResult  # noqa: E402
from catbuddy.memory.dreamer import Dreamer, DreamProposal  # noqa: E402
from catbuddy.memory.factory import dream_config  # noqa: E402
from catbuddy.memory.journal import Journal  # noqa: E402
from catbuddy.memory.paths import MemoryPaths  # noqa: E402
from catbuddy.memory.session_entry import bound_entry  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

SEED = 20241213
ENTRIES = 1_000
RUNS = 2 if quick() else 5
SIMULATED_RUNS = 50
FACTS_PER_RUN = 12
GATHER_TARGET_MS = 150.0  # reading 1,000 entries and building the request
APPLY_TARGET_MS = 50.0  # validating and writing both files with their versions
WORDS = [
    "parser",
    "cache",
    "token",
    "retry",
    "config",
    "layer",
    "module",
    "test",
    "error",
    "fix",
    "path",
    "build",
    "deploy",
    "docs",
    "lint",
]


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(WORDS, k=words)).capitalize() + "."


def make_workspace(root: Path) -> Workspace:
    workspace = Workspace(work_root=root / "project", home=root / "home")
    workspace.work_root.mkdir(parents=True)
    workspace.ensure_home()
    return workspace


def seed_memory(workspace: Workspace, rng: random.Random) -> None:
    workspace.project_memory.parent.mkdir(parents=True, exist_ok=True)
    workspace.global_memory.write_text(
        "# Memory\n\n" + "".join(f"- {sentence(rng, 8)} ({n})\n" for n in range(60)), encoding="utf-8"
    )
    workspace.project_memory.write_text(
        "# Memory\n\n## Build\n" + "".join(f"- {sentence(rng, 10)} ({n})\n" for n in range(120)),
        encoding="utf-8",
    )


def seed_entries(journal: Journal, rng: random.Random, count: int) -> None:
    for n in range(count):
        if n % 5 == 4:
            text = "## Goal and user requests\n" + "\n".join(
                sentence(rng, 20) for _ in range(rng.randint(5, 40))
            )
            journal.append(f"s-{n // 20}", "compaction", bound_entry(text))
        else:
            turns = "\n\n".join(
                f"User: {sentence(rng, rng.randint(5, 40))}\nAssistant: {sentence(rng, rng.randint(10, 60))}"
                for _ in range(rng.randint(1, 8))
            )
            journal.append(f"s-{n // 20}", "session", bound_entry(turns), through=f"m{n:06d}")


def settings(**memory: Any) -> Settings:
    return Settings(model="gpt-4o", memory=MemorySettings(**memory))


class InstantModel:
    """Answers at once: ``add`` new facts per file; on a cap complaint, merges as a model would."""

    def __init__(self, workspace: Workspace, add: int) -> None:
        self.workspace = workspace
        self.add = add
        self.serial = 0
        self.merges = 0
        self.prompt_tokens: list[int] = []

    async def __call__(self, messages: list[dict[str, Any]], max_tokens: int) -> str:
        text = messages[-1]["content"]
        merging = "Merge related facts" in text
        self.merges += merging
        sections = []
        for key, title in (("global", "User Profile"), ("project", "Project Context")):
            path = self.workspace.global_memory if key == "global" else self.workspace.project_memory
            doc = MemoryDoc.parse(path.read_text(encoding="utf-8") if path.exists() else None)
            ops = []
            if merging and doc.items:
                # Fold the oldest third into one line each pair, as the retry asks.
                third = len(doc.items) // 3
                for item in doc.items[:third]:
                    ops.append(f"- DELETE {item.number}")
                ops.append(f"- UPDATE {doc.items[third].number}: Earlier facts, merged ({self.serial}).")
            for _ in range(self.add):
                self.serial += 1
                ops.append(f"- ADD: Fact number {self.serial} about the {WORDS[self.serial % len(WORDS)]}.")
            sections.append(f"## {title}\n" + ("\n".join(ops) or "- NONE"))
        return "\n\n".join(sections) + "\n"


def dreamer(workspace: Workspace, model: Any, cfg: Settings) -> Dreamer:
    counter = counter_for(cfg.encoding_for("gpt-4o"))
    return Dreamer(workspace, dream_config(cfg, "gpt-4o"), model, counter.count_text)


def timed_ms(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return (time.perf_counter() - started) * 1000, value


def one_run(root: Path) -> dict[str, Any]:
    rng = random.Random(SEED)
    workspace = make_workspace(root)
    seed_memory(workspace, rng)
    journal = Journal(MemoryPaths.of(workspace))
    seed_entries(journal, rng, ENTRIES)
    cfg = settings()
    model = InstantModel(workspace, add=3)
    runner = dreamer(workspace, model, cfg)
    counter = counter_for(cfg.encoding_for("gpt-4o"))

    def read_everything() -> int:  # the floor of gather: the same files' bytes, nothing else
        return sum(len(path.read_bytes()) for path in root.rglob("*") if path.is_file())

    read_ms = statistics.median(timed_ms(read_everything)[0] for _ in range(3))
    gather_ms, gathered = timed_ms(runner._gather)  # noqa: SLF001 - the part before the model call
    material, _, system, request = gathered
    prompt_tokens = counter.count_text(system["content"]) + counter.count_text(request["content"])
    entry_tokens = sum(counter.count_text(entry.content) + 24 for entry in material.entries)
    proposal = asyncio.run(runner.propose())
    assert isinstance(proposal, DreamProposal)
    model_ms = 0.0  # instant
    apply_ms, result = timed_ms(lambda: runner.apply(proposal))
    assert isinstance(result, DreamResult) and result.status.value == "applied", result.message
    texts = [path.read_text(encoding="utf-8") for path in (workspace.global_memory, workspace.project_memory)]

    def write_both() -> None:  # the floor of apply: the two files' new text written, no checks, no versions
        for n, text in enumerate(texts):
            (root / f"floor-{n}.md").write_text(text, encoding="utf-8")

    write_ms = statistics.median(timed_ms(write_both)[0] for _ in range(3))
    # Drain the rest: how many runs 1,000 entries take, and what they cost without the model.
    runs, drain_ms = 1, 0.0
    while journal.pending_count():
        started = time.perf_counter()
        outcome = asyncio.run(runner.propose())
        assert isinstance(outcome, DreamProposal)
        final = runner.apply(outcome)
        drain_ms += (time.perf_counter() - started) * 1000
        assert final.ok, final.message
        runs += 1
    return {
        "entries": len(material.entries),
        "waiting": material.waiting,
        "prompt_tokens": prompt_tokens,
        "entry_tokens": entry_tokens,
        "window_room": runner.config.context_window - 4_096 - runner.config.safety_margin,
        "gather": gather_ms,
        "apply": apply_ms,
        "read_floor": read_ms,
        "write_floor": write_ms,
        "model": model_ms,
        "runs": runs,
        "drain": drain_ms,
        "budget": cfg.memory.dream_entry_tokens,
    }


def growth(root: Path) -> dict[str, Any]:
    workspace = make_workspace(root)
    journal = Journal(MemoryPaths.of(workspace))
    cfg = settings()
    model = InstantModel(workspace, add=FACTS_PER_RUN)
    runner = dreamer(workspace, model, cfg)
    rng = random.Random(SEED)
    peak = {"lines": 0, "bytes": 0}
    failed = 0
    for _ in range(SIMULATED_RUNS):
        seed_entries(journal, rng, 3)
        outcome = asyncio.run(runner.propose())
        if not isinstance(outcome, DreamProposal):
            failed += 1
            continue
        runner.apply(outcome)
        for path in (workspace.global_memory, workspace.project_memory):
            text = path.read_text(encoding="utf-8")
            peak["lines"] = max(peak["lines"], len(text.splitlines()))
            peak["bytes"] = max(peak["bytes"], len(text.encode("utf-8")))
    sizes = {
        key: (len(p.read_text().splitlines()), len(p.read_bytes()))
        for key, p in (("global", workspace.global_memory), ("project", workspace.project_memory))
    }
    return {"peak": peak, "final": sizes, "merges": model.merges, "failed": failed, "caps": cfg.memory}


def main() -> int:
    samples = []
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            samples.append(one_run(Path(tmp)))
    first = samples[0]
    gather = statistics.median(s["gather"] for s in samples)
    apply = statistics.median(s["apply"] for s in samples)
    drain = statistics.median(s["drain"] for s in samples)
    per_run_ms = GATHER_TARGET_MS + APPLY_TARGET_MS
    runs_bound = 2 * -(-ENTRIES // first["entries"])
    print_table(
        f"One Dream run without the model call: {ENTRIES:,} pending entries, memory of 60 + 120 bullets "
        f"(median of {RUNS})",
        ["figure", "value", "target / bound", "ok"],
        [
            ["entries read this run", first["entries"], "as many as fit the budget", first["entries"] > 0],
            [
                "their tokens",
                first["entry_tokens"],
                f"≤ {first['budget']:,} (dream_entry_tokens)",
                first["entry_tokens"] <= first["budget"],
            ],
            [
                "prompt tokens (instructions, both files, entries)",
                first["prompt_tokens"],
                f"≤ {first['window_room']:,} (window − reply − margin)",
                first["prompt_tokens"] <= first["window_room"],
            ],
            [
                "gather ms (journal, files, budget, render)",
                round(gather, 2),
                f"≤ {GATHER_TARGET_MS:g}",
                gather <= GATHER_TARGET_MS,
            ],
            [
                "apply ms (validate, 2 versions, 2 files, cursor)",
                round(apply, 2),
                f"≤ {APPLY_TARGET_MS:g}",
                apply <= APPLY_TARGET_MS,
            ],
            [
                "runs to drain all 1,000 entries",
                first["runs"],
                f"≤ {runs_bound}",
                first["runs"] <= runs_bound,
            ],
            [
                "ms for all those runs (no model)",
                round(drain, 1),
                f"≤ {first['runs']} × {per_run_ms:g}",
                drain <= first["runs"] * per_run_ms,
            ],
        ],
    )
    read_floor = statistics.median(s["read_floor"] for s in samples)
    write_floor = statistics.median(s["write_floor"] for s in samples)
    figures = [
        Figure("Dream gather, 1,000 pending entries", gather, "read the same files' bytes", read_floor,
               target=GATHER_TARGET_MS, kind="value"),
        Figure("Dream apply (validate, 2 versions, 2 files, cursor)", apply, "write the two files' new text",
               write_floor, target=APPLY_TARGET_MS, kind="value"),
        Figure("entry tokens read in one run", first["entry_tokens"], "dream_entry_tokens", first["budget"],
               unit="tokens", target=1),
        Figure("prompt tokens of one run", first["prompt_tokens"], "window − reply − margin",
               first["window_room"], unit="tokens", target=1),
        Figure("runs to drain 1,000 entries", first["runs"], "2 × ⌈1,000 ÷ entries per run⌉", runs_bound,
               unit="", target=1),
        Figure("all those runs without the model", drain, "runs × (gather + apply targets)",
               first["runs"] * per_run_ms, target=1),
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        grown = growth(Path(tmp))
    caps = grown["caps"]
    print_table(
        f"Memory size over {SIMULATED_RUNS} simulated runs adding {FACTS_PER_RUN} facts to each file per run",
        ["figure", "value", "bound", "ok"],
        [
            [
                "peak lines of a file",
                grown["peak"]["lines"],
                f"≤ {caps.memory_max_lines}",
                grown["peak"]["lines"] <= caps.memory_max_lines,
            ],
            [
                "peak bytes of a file",
                grown["peak"]["bytes"],
                f"≤ {caps.memory_max_bytes:,}",
                grown["peak"]["bytes"] <= caps.memory_max_bytes,
            ],
            [
                "global: lines / bytes at the end",
                f"{grown['final']['global'][0]} / {grown['final']['global'][1]:,}",
                "within the caps",
                grown["final"]["global"][0] <= caps.memory_max_lines,
            ],
            [
                "project: lines / bytes at the end",
                f"{grown['final']['project'][0]} / {grown['final']['project'][1]:,}",
                "within the caps",
                grown["final"]["project"][0] <= caps.memory_max_lines,
            ],
            [
                "answers sent back to merge",
                grown["merges"],
                "≥ 1 once the caps are reached",
                grown["merges"] >= 1,
            ],
            ["runs that wrote nothing", grown["failed"], "0", grown["failed"] == 0],
        ],
    )
    figures += [
        Figure(f"peak lines of a memory file over {SIMULATED_RUNS} runs", grown["peak"]["lines"],
               "memory_max_lines", caps.memory_max_lines, unit="", target=1),
        Figure(f"peak bytes of a memory file over {SIMULATED_RUNS} runs", grown["peak"]["bytes"],
               "memory_max_bytes", caps.memory_max_bytes, unit="bytes", target=1),
        Figure("runs that wrote nothing", grown["failed"], "simulated runs", SIMULATED_RUNS, unit="", target=0,
               kind="value"),
        Figure("answers sent back to merge", grown["merges"], "simulated runs", SIMULATED_RUNS, unit="",
               target=1, kind="value", at_most=False),
    ]  # fmt: skip
    return exit_status(report("bench_dream", figures))


if __name__ == "__main__":
    raise SystemExit(main())
