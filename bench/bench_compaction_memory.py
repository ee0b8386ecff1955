"""What compaction keeps, what it costs beyond today's, and how fast `recall` searches (issue 12).

Run: ``python bench/bench_compaction_memory.py``. Three parts:

1. A long synthetic session through the real AgentLoop (an in-process provider that answers at no
   cost, so only catbuddy's work is measured): rounds of tool traffic in the exact formats the tools
   write — file writes and edits, failing then passing test runs, reads, web fetches — and the user's
   rules stated early, each round followed by a turn that auto-compacts. Per compaction: the ledger,
   the user's words and the whole pinned summary in tokens; then the share of modified files and of the
   user's rules present in the final request (target 100%, by construction).
2. Compaction time without the model call on 1,000 folded messages: today's work (plan, count, chunk,
   build the summary requests) measured in the same run as the baseline, and the new work on top of it
   (ledger built and bounded, the user's words fitted, the pinned summary rendered, the live-prefix
   request built). Target: the new work under 50 ms.
3. `recall` over a 50 MB session file (realistic mix, a marker planted in an early tool result):
   median latency per query kind. Target: under 200 ms.
"""

from __future__ import annotations

import asyncio
import gc
import json
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report  # noqa: E402

from catbuddy.config import ContextSettings, ModelSpec, Settings  # noqa: E402
from catbuddy.context.compaction.compactor import Compactor, plan_compaction  # noqa: E402
from catbuddy.context.compaction.fold import finish_fold, prepare_fold  # noqa: E402
from catbuddy.context.compaction.ledger import Ledger, render_ledger  # noqa: E402
from catbuddy.context.counting.tokens import TokenCounter, counter_for  # noqa: E402
from catbuddy.llm.types import Completed, LLMResponse, TextChunk, Usage  # noqa: E402
from catbuddy.messages import content_text  # noqa: E402
from catbuddy.session.history import HistoryEntry, WorkingHistory  # noqa: E402
from catbuddy.session.records import CompactionRecord, read_session_file  # noqa: E402
from catbuddy.session.search import Query, search_sessions  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

SEED = 20261202
MODEL = "bench-model"
ENCODING = "o200k_base"
ROUNDS = 7
FOLDED = 1_000
RUNS = 3 if quick() else 5
RECALL_MB = 50  # the target's size, quick or not (a run takes seconds)
FOLD_TARGET_MS = 50.0
RECALL_TARGET_MS = 200.0
MARKER = "ZEBRA-7731-QUOKKA"
RULES = [
    "Always run the tests with `make test` before you say something works.",
    "Never edit the generated files under build/.",
    "Don't add new dependencies without asking me first.",
]
WORDS = ["the", "parser", "token", "cache", "request", "retry", "config", "layer", "module", "test", "error", "fix",
         "path", "value", "index"]  # fmt: skip
PROSE = (
    '## Goal\nRefactor the parser module.\n\n## Rules and preferences\n- "Never edit the generated files"\n\n'
    "## Decisions\nKeep the tokenizer cache.\n\n## State of the work\nTests pass.\n\n## Open questions\nnone\n\n"
    "## Next step\nMerge."
)


# --- synthetic tool traffic in the tools' own formats ----------------------------------------------


class Traffic:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.calls = 0
        self.modified: list[str] = []

    def _call(self, name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
        self.calls += 1
        call_id = f"call_{self.calls}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": result},
        ]

    def text(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=self.rng.randint(low, high)))

    def code(self, lines: int) -> str:
        return "".join(f"def {self.rng.choice(WORDS)}_{i}(x):\n    return x + {i}\n" for i in range(lines))

    def round(self, number: int, size: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while len(out) < size:
            out.append(
                {
                    "role": "user",
                    "content": self.text(5, 40)
                    + "\n\n[runtime: time=2026-12-02T10:00:00+00:00, channel=tui]",
                }
            )
            kind = self.rng.random()
            path = f"src/{self.rng.choice(WORDS)}_{number}_{len(out) % 7}.py"
            if kind < 0.25:
                body = self.code(self.rng.randint(3, 40))
                out += self._call(
                    "write_file",
                    {"path": path, "content": body},
                    f"Created {path} ({body.count(chr(10))} lines, {len(body)} bytes).",
                )
                self.modified.append(path)
            elif kind < 0.45 and self.modified:
                target = self.rng.choice(self.modified)
                out += self._call(
                    "edit_file",
                    {"path": target, "old_string": "return x", "new_string": "return x  # checked\n    pass"},
                    f"Edited {target}: replaced 1 occurrence (first at line 2).\n\n--- a/{target}\n+++ b/{target}",
                )
            elif kind < 0.6:
                failed = self.rng.random() < 0.4
                output = "\n".join(self.text(4, 12) for _ in range(30))
                verdict = "2 failed, 40 passed in 1.20s" if failed else "42 passed in 1.10s"
                out += self._call(
                    "exec",
                    {"command": "make test"},
                    f"{output}\n{verdict}\n\nExit code: {2 if failed else 0}",
                )
            elif kind < 0.85:
                body = "\n".join(f"{i:>6}\t{self.text(4, 12)}" for i in range(1, self.rng.randint(20, 200)))
                out += self._call("read_file", {"path": f"lib/{self.rng.choice(WORDS)}.py"}, body)
            else:
                out += self._call(
                    "web_fetch",
                    {"url": f"https://docs.example.org/{self.rng.choice(WORDS)}"},
                    self.text(50, 300),
                )
            out.append({"role": "assistant", "content": self.text(10, 60)})
        return out


# --- part 1: a long session through the loop ---------------------------------------------------------


@dataclass
class Provider:
    """Answers chat requests with a short text and summary requests with prose, at no cost."""

    last_request: list[dict[str, Any]] = field(default_factory=list)
    model_time: float = 0.0

    async def stream_chat(self, *, model: str, messages: Sequence[Any], **_: Any) -> AsyncIterator[Any]:
        self.last_request = list(messages)
        yield TextChunk("noted")
        yield Completed(LLMResponse({"role": "assistant", "content": "noted"}, "stop", Usage(1000, 5), model))

    async def complete(self, **_: Any) -> LLMResponse:
        return LLMResponse({"role": "assistant", "content": PROSE}, "stop", None, MODEL)

    async def aclose(self) -> None:
        return None


def loop_settings() -> Settings:
    return Settings(
        model=MODEL,
        base_url="http://127.0.0.1:9/v1",
        api_key="bench",
        approval="yolo",
        max_retries=0,
        models={MODEL: ModelSpec(128_000, 16_384, ENCODING)},
        context=ContextSettings(compact_message_threshold=50, compact_keep_recent=25),
    )


async def long_session(tmp: Path) -> tuple[list[list[Any]], list[Any]]:
    from catbuddy.agent.loop import AgentLoop

    root = tmp / "project"
    root.mkdir()
    workspace = Workspace(work_root=root, home=tmp / "home")
    workspace.ensure_home()
    provider = Provider()

    def factory(settings: Settings) -> Any:
        return provider

    loop = AgentLoop(workspace, loop_settings(), channel="headless", provider_factory=factory)
    await loop.start()
    traffic = Traffic(random.Random(SEED))
    try:
        for rule in RULES:
            await loop.run_turn(rule)
        for number in range(ROUNDS):
            for message in traffic.round(number, 120):
                loop.conversation.append(message)
            await loop.run_turn(f"round {number}: carry on")
        path = loop.session.path
    finally:
        await loop.aclose()
    counter = counter_for(ENCODING)
    records = [r for r in read_session_file(path).records if isinstance(r, CompactionRecord)]
    rows = []
    for record in records:
        ledger_text = render_ledger(Ledger.from_dict(record.extra.get("ledger")))
        words = record.extra.get("user_messages") or []
        rows.append(
            [
                record.id,
                record.extra.get("mode", ""),
                record.extra.get("folded_messages", 0),
                counter.count_text(ledger_text),
                sum(counter.count_text(w["text"]) for w in words),
                len(words),
                record.extra.get("prose_tokens", 0),
                record.extra.get("summary_tokens", 0),
            ]
        )
    final = "\n".join(
        content_text(m.get("content"))
        + "".join(c["function"]["arguments"] for c in m.get("tool_calls") or ())
        for m in provider.last_request
    )
    modified = sorted(set(traffic.modified))
    files_kept = sum(1 for p in modified if p in final) / max(1, len(modified))
    rules_kept = sum(1 for r in RULES if r in final) / len(RULES)
    summary = [
        ["compactions", len(records), ">= 5", "ok" if len(records) >= 5 else "MISSED"],
        [
            "modified files in the final request",
            f"{files_kept:.0%} of {len(modified)}",
            "100%",
            "ok" if files_kept == 1 else "MISSED",
        ],
        [
            "user rules in the final request (verbatim)",
            f"{rules_kept:.0%} of {len(RULES)}",
            "100%",
            "ok" if rules_kept == 1 else "MISSED",
        ],
    ]
    kept = {
        "compactions": len(records),
        "files": sum(1 for p in modified if p in final),
        "modified": len(modified),
        "rules": sum(1 for r in RULES if r in final),
    }
    return rows, summary, kept


# --- part 2: compaction time without the model call --------------------------------------------------


async def instant(messages: list[dict[str, Any]], max_tokens: int, **_: Any) -> str:
    return PROSE


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def folded_entries() -> tuple[list[HistoryEntry], WorkingHistory]:
    traffic = Traffic(random.Random(SEED + 1))
    messages = [{"role": "user", "content": rule} for rule in RULES]
    number = 0
    while len(messages) < FOLDED + 40:
        messages += traffic.round(number, 60)
        number += 1
    entries = [HistoryEntry(f"m{i:06d}", m) for i, m in enumerate(messages, start=1)]
    while True:  # trim the front until exactly FOLDED are folded
        plan = plan_compaction(entries, 25)
        assert plan is not None
        extra = len(plan.fold) - FOLDED
        if extra == 0:
            break
        entries = entries[extra:]
    return entries, WorkingHistory(entries=entries)


def fold_timings(counter: TokenCounter, window: int) -> dict[str, float]:
    """Median ms of each step over RUNS runs, steps interleaved so machine noise hits them alike."""
    entries, history = folded_entries()
    counter.count_messages(e.message for e in entries)  # warm, as the loop's counter is
    compactor = Compactor(
        counter, context_window=window, max_output_tokens=16_384, safety_margin=1024, summarize=instant
    )
    plan = plan_compaction(entries, 25)
    assert plan is not None
    folded = [e.message for e in plan.fold]
    kept = [e.message for e in plan.keep]
    steps: dict[str, list[float]] = {
        k: [] for k in ("plan", "requests", "requests+ledger", "ledger", "words+pinned", "live request")
    }
    for _ in range(RUNS):
        gc.collect()
        steps["plan"].append(timed(plan_compaction, entries, 25)[0])
        ms, _ = timed(run, compactor.compact("an earlier summary", folded, "keep the API"))
        steps["requests"].append(ms)
        ms, prep = timed(
            prepare_fold, history, plan, work_root="/work", count=counter.count_text, ledger_tokens=1500
        )
        steps["ledger"].append(ms)
        ledger = prep.ledger_text
        ms, result = timed(run, compactor.compact(prep.previous_prose, folded, "keep the API", ledger=ledger))
        steps["requests+ledger"].append(ms)
        prefix = [{"role": "system", "content": "s"}, *folded]
        steps["live request"].append(
            timed(compactor.live_request, prefix, None, ledger=ledger, kept=kept, target=500)[0]
        )
        ms, _ = timed(finish_fold, prep, plan, result.summary, count=counter.count_text, user_tokens=2000)
        steps["words+pinned"].append(ms)
    med = {k: statistics.median(v) for k, v in steps.items()}
    med["today"] = med["plan"] + med["requests"]
    med["new"] = (
        med["plan"] + med["ledger"] + med["requests+ledger"] + med["words+pinned"] + med["live request"]
    )
    return med


# --- part 3: recall over 50 MB ----------------------------------------------------------------------


def write_big_session(path: Path, megabytes: int) -> int:
    rng = random.Random(SEED + 2)
    traffic = Traffic(rng)
    size, number, line_no = 0, 0, 0
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "meta", "session_id": path.stem, "model": MODEL}) + "\n")
        while size < megabytes * 1_000_000:
            messages = traffic.round(number, 60)
            if number == 1:
                messages[2]["content"] = (
                    f"release notes\nthe release code is {MARKER}\n" + messages[2]["content"]
                )
            for message in messages:
                line_no += 1
                line = json.dumps(
                    {"type": "message", "id": f"m{line_no:06d}", "ts": "2026-12-02T10:00:00Z", **message},
                    ensure_ascii=False,
                    separators=(",", ":"),
                )
                handle.write(line + "\n")
                size += len(line) + 1
            if number % 20 == 19:
                record = {
                    "type": "compaction",
                    "id": f"c{number:06d}",
                    "ts": None,
                    "summary": "s",
                    "folded_through": f"m{line_no - 30:06d}",
                }
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")
            number += 1
    return line_no


def recall_timings(tmp: Path, floors: list[float]) -> list[list[Any]]:
    path = tmp / "big.jsonl"
    messages = write_big_session(path, RECALL_MB)
    files = [(path.stem, path)]
    queries = {
        "a rare marker (words, the default)": Query(terms=[MARKER.lower()]),
        "two common words": Query(terms=["checked", "failed"]),
        "a regex with a literal": Query(pattern=re.compile(r"release code is \w+-\d+")),
        "an anchored regex": Query(pattern=re.compile(r"(?m)^release notes$")),
        "a regex without a literal": Query(pattern=re.compile(r"[A-Z]{5}-\d{4}-[A-Z]{6}")),
    }
    rows = []
    size_mb = path.stat().st_size / 1e6
    read_times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        path.read_bytes()
        read_times.append((time.perf_counter() - started) * 1000)
    floor = statistics.median(read_times)
    floors.append(floor)
    for name, query in queries.items():
        search_sessions(files, query)  # the page cache is warm after writing; one run to warm the code
        times, found = [], 0
        for _ in range(RUNS):
            started = time.perf_counter()
            hits, _ = search_sessions(files, query)
            times.append((time.perf_counter() - started) * 1000)
            found = len(hits)
        median = statistics.median(times)
        rows.append(
            [
                name,
                f"{size_mb:.0f} MB / {messages:,} msgs",
                found,
                median,
                RECALL_TARGET_MS,
                "ok" if median < RECALL_TARGET_MS else "MISSED",
            ]
        )
    return rows


def main() -> int:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows, summary, kept = asyncio.run(long_session(Path(tmp)))
        figures += [
            Figure("compactions in the long session", kept["compactions"], "at least", 5, unit="", target=5,
                   kind="value", at_most=False),
            Figure("modified files in the final request", kept["files"], "files the session modified",
                   kept["modified"], unit="", target=1, at_most=False),
            Figure("user rules in the final request (verbatim)", kept["rules"], "rules the user stated",
                   len(RULES), unit="", target=1, at_most=False),
        ]  # fmt: skip
        print_table(
            f"A long session: {len(RULES)} rules stated first, then {ROUNDS} rounds of 120 messages of tool traffic",
            [
                "compaction",
                "mode",
                "folded",
                "ledger tok",
                "user words tok",
                "user msgs",
                "prose tok",
                "pinned tok",
            ],
            rows,
        )
        print_table("What the final request still holds", ["what", "measured", "target", "verdict"], summary)

        counter = counter_for(ENCODING)
        fold_rows = []
        for window in (128_000, 1_000_000):
            med = fold_timings(counter, window)
            beyond = med["new"] - med["today"]
            fold_rows.append(
                [f"{window:,}", med["today"], med["new"], beyond, med["ledger"], med["words+pinned"], med["live request"],
                 FOLD_TARGET_MS, "ok" if beyond < FOLD_TARGET_MS else "MISSED"]
            )  # fmt: skip
            figures.append(Figure(f"compaction work beyond today's, {window:,} window", beyond,
                                  "today's compaction work, same run", med["today"], target=FOLD_TARGET_MS,
                                  kind="value"))  # fmt: skip
        print_table(
            f"Compaction without the model call, {FOLDED:,} folded messages (median of {RUNS}, ms)",
            [
                "window",
                "today",
                "new",
                "beyond today",
                "ledger",
                "words+pinned",
                "live request",
                "target",
                "verdict",
            ],
            fold_rows,
        )
        floors: list[float] = []
        recall_rows = recall_timings(Path(tmp), floors)
        print_table(
            f"recall over a {RECALL_MB} MB session (median of {RUNS}, ms)",
            ["query", "session", "hits", "ms", "target", "verdict"],
            recall_rows,
        )
        for row in recall_rows:
            figures.append(Figure(f"recall, {RECALL_MB} MB: {row[0]}", row[3], "read the file's bytes once",
                                  floors[0], target=RECALL_TARGET_MS, kind="value"))  # fmt: skip
    return exit_status(report("bench_compaction_memory", figures))


if __name__ == "__main__":
    raise SystemExit(main())
