"""Billed input of a long tool-heavy Claude session: cache breakpoints against none, and against a prefix cache.

Run: ``python bench/bench_anthropic_cache.py [--turns N] [--quick]``.

The same synthetic session as bench_cache.py (one to three ``read_file`` calls a turn on files of
300–2,500 tokens, a 128k window, microcompaction batches and compactions as catbuddy ships them) runs
through the real agent loop against the scripted server three times in one run:

- ``breakpoints``: Claude behind an OpenAI-compatible gateway with catbuddy's ``cache_control``
  breakpoints, on the server's simulated Anthropic cache (``cache_report = "anthropic"``: only marked
  prefixes are written, at 1.25× input; reads cost 0.1×);
- ``no breakpoints``: the same, with ``cache_breakpoints = false`` (what Claude cost before: it caches
  nothing unmarked);
- ``prefix cache``: the same session on an OpenAI-style automatic prefix cache (no writes billed,
  reads at 0.1× as for OpenAI's GPT-5 family), the reference catbuddy's byte-stable prefix was built for.

Billed input = fresh tokens + 1.25 × written + 0.1 × read, summed over every request the server answered.
Target: breakpoints ≤ 0.5× no-breakpoints.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report  # noqa: E402
from bench_cache import SEED, ToolHeavyBrain, make_files  # noqa: E402

from catbuddy.agent.events import TurnEndReason  # noqa: E402
from catbuddy.agent.loop import AgentLoop  # noqa: E402
from catbuddy.config import ModelOptions, ModelSpec  # noqa: E402
from catbuddy.testing.scripted_llm import ScriptedLLM  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

TURNS = 100
QUICK_TURNS = 25
MODEL = "anthropic/claude-sonnet-4.5"
WINDOW = (128_000, 8_192)
WRITE_PRICE = 1.25  # × input, Anthropic's 5-minute cache write
READ_PRICE = 0.10  # × input, a cache read (Anthropic; OpenAI's GPT-5 family too)
TARGET = 0.5
ARMS = {  # name → (server cache report, catbuddy's cache_breakpoints)
    "breakpoints": ("anthropic", True),
    "no breakpoints": ("anthropic", False),
    "prefix cache": ("openai", False),
}


@dataclass
class Bill:
    requests: int = 0
    prompt: int = 0
    read: int = 0
    written: int = 0
    largest: int = 0

    def add(self, prompt: int, read: int, written: int) -> None:
        self.requests += 1
        self.prompt += prompt
        self.read += read
        self.written += written
        self.largest = max(self.largest, prompt)

    @property
    def billed(self) -> float:
        fresh = self.prompt - self.read - self.written
        return fresh + WRITE_PRICE * self.written + READ_PRICE * self.read

    def row(self, name: str) -> list[Any]:
        hit = self.read / self.prompt if self.prompt else 0.0
        return [
            name,
            self.requests,
            self.prompt,
            self.read,
            self.written,
            f"{hit:.0%}",
            round(self.billed),
            self.largest,
        ]


async def session(turns: int, cache_report: str, breakpoints: bool) -> Bill:
    rng = random.Random(SEED)
    work = Path(tempfile.mkdtemp(prefix="cb-bench-anthropic-cache-"))
    workspace = Workspace.at(work / "project", work / "home")
    workspace.work_root.mkdir(parents=True)
    brain = ToolHeavyBrain(make_files(workspace.work_root, rng), rng)
    bill = Bill()
    with ScriptedLLM([brain] * (turns * 8), context_window=WINDOW[0], cache_report=cache_report) as llm:
        settings = llm.settings(
            model=MODEL,
            approval="yolo",
            models={MODEL: ModelSpec(*WINDOW)},
            model_options={MODEL: ModelOptions(cache_breakpoints=breakpoints)},
        )
        loop = AgentLoop(workspace, settings, channel="headless", interactive=False)
        await loop.start()
        try:
            for turn in range(turns):
                brain.start_turn()
                outcome = await loop.run_turn(f"Turn {turn}: read a few modules and tell me about them.")
                if outcome.reason is not TurnEndReason.DONE:
                    raise RuntimeError(f"turn {turn} ended {outcome.reason}")
                for request in llm.requests:
                    if request.prompt_tokens is not None and request.outcome != "context_length_exceeded":
                        bill.add(request.prompt_tokens, request.cached_tokens, request.cache_write_tokens)
                llm.clear_requests()
        finally:
            await loop.aclose()
    return bill


HEADERS = ["arm", "requests", "prompt tokens", "read", "written", "hit", "billed input", "largest"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TURNS} turns")
    args = parser.parse_args(argv)
    turns = args.turns or (QUICK_TURNS if args.quick or quick() else TURNS)
    bills = {name: asyncio.run(session(turns, report_as, marks)) for name, (report_as, marks) in ARMS.items()}
    print_table(
        f"{turns}-turn tool-heavy Claude session, 128k window (writes {WRITE_PRICE}×, reads {READ_PRICE}×)",
        HEADERS,
        [bill.row(name) for name, bill in bills.items()],
    )
    ours, none, prefix = bills["breakpoints"], bills["no breakpoints"], bills["prefix cache"]
    same = f"same {turns}-turn session"
    figures = [
        Figure("billed input, breakpoints", ours.billed, f"no breakpoints, {same}", none.billed, unit="tokens",
               target=TARGET),
        Figure("billed input, breakpoints", ours.billed, f"OpenAI-style prefix cache, {same}", prefix.billed,
               unit="tokens"),
    ]  # fmt: skip
    return exit_status(report("bench_anthropic_cache", figures))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
