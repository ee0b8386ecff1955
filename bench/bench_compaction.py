"""The cost of a compaction apart from the model call, for 1,000 folded messages.

Run: ``python bench/bench_compaction.py``. A seeded history of 1,025 messages (user turns, assistant
tool calls, tool results of 200–8,000 characters) is compacted with the newest 25 kept. The model
call is replaced by an instant reply, so what is timed is catbuddy's own work:

- selection: ``plan_compaction`` (where the kept part starts),
- prompt: counting the folded messages, cutting them into chunks that fit the window, rendering
  the template and building every summarizer request (``Compactor.compact``),
- record: appending the ``compaction`` record to a session file (flushed and fsync'd),
- resume: reading that file back and rebuilding the working history.

"warm" reuses a token counter that has already counted these messages, as the agent loop's has;
"cold" starts with an empty count cache. Windows: gpt-4o (128k) and a small local model (8k).

Figures (no targets: information): the warm total beside the cold one, and resuming beside the floor
of reading the same file (``json.loads`` of every line), measured in the same run. ``--quick``: 3 runs.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, print_table, quick, report  # noqa: E402

from catbuddy.context.compaction.compactor import Compactor, plan_compaction  # noqa: E402
from catbuddy.context.counting.tokens import TokenCounter  # noqa: E402
from catbuddy.session.history import HistoryEntry, rebuild_history  # noqa: E402
from catbuddy.session.records import read_session_file  # noqa: E402
from catbuddy.session.store import Session, SessionStore  # noqa: E402

SEED = 20240605
ENCODING = "o200k_base"
FOLDED = 1_000
KEEP = 25
RUNS = 3 if quick() else 5
WINDOWS = {"gpt-4o 128k": (128_000, 16_384), "local 8k": (8_000, 1_000)}
SUMMARY = "## Goal and user requests\nRefactor the parser.\n\n## Current state\nTests pass."
WORDS = (
    "parser",
    "token",
    "cache",
    "request",
    "retry",
    "config",
    "layer",
    "module",
    "test",
    "error",
    "fix",
    "path",
)


def make_history(rng: random.Random, total: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    n = 0
    while len(messages) < total:
        n += 1
        messages.append({"role": "user", "content": " ".join(rng.choices(WORDS, k=rng.randint(5, 60)))})
        for _ in range(rng.randint(0, 3)):
            call_id = f"call_{n}_{len(messages)}"
            args = json.dumps({"path": f"src/{rng.choice(WORDS)}.py"})
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": args},
                        }
                    ],
                }
            )
            body = "\n".join(
                f"{i:4d}  def {rng.choice(WORDS)}_{i}(self): return {rng.randint(0, 999)}"
                for i in range(rng.randint(4, 160))
            )
            messages.append({"role": "tool", "tool_call_id": call_id, "content": body})
        messages.append({"role": "assistant", "content": " ".join(rng.choices(WORDS, k=rng.randint(10, 80)))})
    return messages


def history_with_fold(rng: random.Random) -> list[HistoryEntry]:
    """About FOLDED + KEEP messages, trimmed so that exactly FOLDED are folded."""
    messages = make_history(rng, FOLDED + KEEP + 10)
    entries = [HistoryEntry(f"m{i:06d}", m) for i, m in enumerate(messages, start=1)]
    # Cut the front so the plan folds exactly FOLDED messages.
    while True:
        plan = plan_compaction(entries, KEEP)
        assert plan is not None
        extra = len(plan.fold) - FOLDED
        if extra == 0:  # number them as the session file will
            return [HistoryEntry(f"m{i:06d}", e.message) for i, e in enumerate(entries, start=1)]
        if extra < 0:
            raise SystemExit(f"history too short: folds {len(plan.fold)}")
        entries = entries[extra:]


async def instant(messages: list[dict[str, Any]], max_tokens: int) -> str:
    return SUMMARY


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def measure(
    entries: list[HistoryEntry], window: tuple[int, int], warm: bool, session: Session
) -> dict[str, Any]:
    counter = TokenCounter(ENCODING)
    counter.load()  # the Rust encoder, as a session that has run a while has it
    if warm:
        counter.count_messages(entry.message for entry in entries)
    select_ms, plan = timed(lambda: plan_compaction(entries, KEEP))
    compactor = Compactor(
        counter, context_window=window[0], max_output_tokens=window[1], safety_margin=1024, summarize=instant
    )
    folded = [entry.message for entry in plan.fold]
    prompt_ms, result = timed(
        lambda: asyncio.run(compactor.compact("an earlier summary", folded, "keep the API"))
    )
    folded_through = f"m{len(plan.fold):06d}"  # the session below numbers its messages the same way
    record_ms, _ = timed(
        lambda: session.append_compaction(result.summary, folded_through, folded_messages=len(folded))
    )
    resume_ms, history = timed(lambda: rebuild_history(read_session_file(session.path).records))
    assert [e.message for e in history.entries] == [e.message for e in plan.keep]
    return {
        "select": select_ms,
        "prompt": prompt_ms,
        "record": record_ms,
        "resume": resume_ms,
        "chunks": result.chunks,
        "folded_tokens": result.tokens_replaced,
    }


def json_floor(path: Path) -> float:
    """Median ms to read ``path`` and ``json.loads`` every line: the least a resume can do."""

    def read() -> int:
        return len([json.loads(line) for line in path.read_bytes().splitlines() if line])

    return statistics.median(timed(read)[0] for _ in range(RUNS))


def main() -> None:
    entries = history_with_fold(random.Random(SEED))
    rows = []
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        session = SessionStore(Path(tmp)).create(Path(tmp), "bench")
        for entry in entries:
            assert session.append_message(entry.message) == entry.id
        totals: dict[tuple[str, bool], float] = {}
        resumes: dict[tuple[str, bool], float] = {}
        for name, window in WINDOWS.items():
            for warm in (True, False):
                runs = [measure(entries, window, warm, session) for _ in range(RUNS)]
                med = {
                    k: statistics.median(r[k] for r in runs) for k in ("select", "prompt", "record", "resume")
                }
                total = med["select"] + med["prompt"] + med["record"]
                totals[(name, warm)] = total
                resumes[(name, warm)] = med["resume"]
                rows.append(
                    [
                        name,
                        "warm" if warm else "cold",
                        runs[0]["folded_tokens"],
                        runs[0]["chunks"],
                        med["select"],
                        med["prompt"],
                        med["record"],
                        total,
                        med["resume"],
                    ]
                )
        session.close()
        floor = json_floor(session.path)
        for name in WINDOWS:
            figures.append(Figure(f"compaction w/o the model, {name}, warm counts", totals[(name, True)],
                                  "same, cold count cache", totals[(name, False)]))  # fmt: skip
        resume = statistics.median(resumes.values())
        figures.append(Figure("resume the compacted session (read + rebuild)", resume,
                              "read the same file + json.loads every line", floor))  # fmt: skip
    print_table(
        f"Compaction without the model call: {FOLDED:,} folded messages, {KEEP} kept (median of {RUNS}, ms)",
        ["window", "counts", "folded tokens", "chunks", "select", "prompt", "record", "total", "resume"],
        rows,
    )
    report("bench_compaction", figures)


if __name__ == "__main__":
    main()
