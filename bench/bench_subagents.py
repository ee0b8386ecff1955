"""Delegation against doing it yourself: a scripted exploration (read 30 files, answer one question).

Run: ``python bench/bench_subagents.py [--files N] [--quick]``.

The same exploration runs twice through the real agent loop against the scripted server (with its
simulated prefix cache), in one run:

- ``direct``: the parent reads the 30 files itself (five `read_file` calls a reply), then answers;
- ``delegated``: the parent makes one `task` call; an `explore` subagent reads the same files the same
  way in its own context and answers; the parent answers from that.

Figures: the parent's largest request (its context at its fullest) and the parent's billed input (prompt
tokens with a cached token at 10%), delegated against direct; and, for information, all billed input
(the child's requests included): what delegation costs or saves in total. Targets: the parent's largest
request ≤ 0.25× and its billed input ≤ 0.5× of doing it directly.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report, without_quick  # noqa: E402

from catbuddy.agent.loop import AgentLoop  # noqa: E402
from catbuddy.config import ModelSpec  # noqa: E402
from catbuddy.messages import content_text  # noqa: E402
from catbuddy.testing.cache_figures import CACHED_PRICE  # noqa: E402
from catbuddy.testing.script import Reply, ReplySpec, ToolCallSpec  # noqa: E402
from catbuddy.testing.scripted_llm import ScriptedLLM  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

FILES = 30
QUICK_FILES = 12
READS_PER_REPLY = 5
WINDOW = ModelSpec(200_000, 8_192)
TARGET_LARGEST = 0.25
TARGET_PARENT_BILLED = 0.5
CHILD_MARK = "## Agent: "
QUESTION = "Which module defines `resolve_token`, and what does it return?"
ANSWER = "`resolve_token` is defined in `pkg/module_17.py` (line 41); it returns the token's canonical form."


def write_project(root: Path, files: int) -> list[str]:
    """``files`` modules of ~60 lines each (≈ 700 tokens): realistic-looking code to read."""
    paths = []
    for number in range(files):
        path = root / "pkg" / f"module_{number:02d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = [f'"""Module {number}: helpers for stage {number} of the pipeline."""', "", "import re", ""]
        for fn in range(6):
            body += [
                f"def stage_{number}_step_{fn}(value: str, *, strict: bool = False) -> str:",
                f'    """Normalise ``value`` for step {fn} of stage {number}; strict mode rejects blanks."""',
                "    cleaned = re.sub(r'\\s+', ' ', value).strip()",
                "    if strict and not cleaned:",
                f"        raise ValueError('stage {number} step {fn}: empty value')",
                f"    return cleaned.lower() if {fn} % 2 else cleaned.upper()",
                "",
            ]
        paths.append(str(path.relative_to(root)))
        path.write_text("\n".join(body) + "\n", encoding="utf-8")
    return paths


class Explorer:
    """Scripted replies: reads ``paths`` five a reply, then answers. ``delegate``: the parent hands the
    reading to a subagent with one `task` call instead."""

    def __init__(self, paths: list[str], delegate: bool) -> None:
        self.paths = paths
        self.delegate = delegate

    def __call__(self, body: dict[str, Any]) -> ReplySpec:
        messages = body["messages"]
        child = CHILD_MARK in content_text(messages[0].get("content"))
        if self.delegate and not child:
            if any(m.get("role") == "tool" for m in messages):
                return Reply.text(f"From the subagent: {ANSWER}", chunk_size=10_000)
            prompt = f"{QUESTION} Read every file under pkg/ to be sure; answer with path and line."
            call = ToolCallSpec("task", {"description": "find resolve_token", "prompt": prompt})
            return ReplySpec(tool_calls=(call,), chunk_size=10_000)
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done >= len(self.paths):
            return Reply.text(ANSWER, chunk_size=10_000)
        batch = self.paths[done : done + READS_PER_REPLY]
        calls = tuple(ToolCallSpec("read_file", {"path": path}) for path in batch)
        return ReplySpec(tool_calls=calls, chunk_size=10_000)


@dataclass
class Figures:
    parent_largest: int
    parent_billed: float
    total_billed: float
    parent_requests: int
    child_requests: int


def billed(request: Any) -> float:
    prompt = request.prompt_tokens or 0
    cached = min(request.cached_tokens, prompt)
    return prompt - cached + cached * CACHED_PRICE


async def explore(files: int, delegate: bool) -> Figures:
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        root.mkdir()
        paths = write_project(root, files)
        workspace = Workspace.at(root, home)
        llm = ScriptedLLM([Explorer(paths, delegate)] * (4 * files + 10)).start()
        try:
            settings = llm.settings(approval="yolo", models={"scripted": WINDOW})
            loop = AgentLoop(workspace, settings, channel="headless", interactive=False)
            await loop.start()
            try:
                await loop.run_turn(QUESTION)
            finally:
                await loop.aclose()
            requests = llm.requests
        finally:
            llm.close()
    parent = [r for r in requests if CHILD_MARK not in content_text(r.messages[0].get("content"))]
    children = [r for r in requests if r not in parent]
    return Figures(
        parent_largest=max(r.prompt_tokens or 0 for r in parent),
        parent_billed=sum(billed(r) for r in parent),
        total_billed=sum(billed(r) for r in requests),
        parent_requests=len(parent),
        child_requests=len(children),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=QUICK_FILES if quick() else FILES)
    args = parser.parse_args(without_quick(sys.argv[1:] if argv is None else argv))
    direct = asyncio.run(explore(args.files, delegate=False))
    delegated = asyncio.run(explore(args.files, delegate=True))
    print_table(
        f"Exploring {args.files} files to answer one question",
        ["run", "parent requests", "child requests", "parent largest", "parent billed", "all billed"],
        [
            [
                name,
                f.parent_requests,
                f.child_requests,
                f"{f.parent_largest:,}",
                f"{f.parent_billed:,.0f}",
                f"{f.total_billed:,.0f}",
            ]  # fmt: skip
            for name, f in (("direct", direct), ("delegated", delegated))
        ],
    )
    at_target_size = args.files >= FILES  # the targets were set on the 30-file task
    figures = [
        Figure(
            "parent's largest request, delegated",
            delegated.parent_largest,
            "direct",
            direct.parent_largest,
            unit="tokens",
            target=TARGET_LARGEST if at_target_size else None,
        ),  # fmt: skip
        Figure(
            "parent's billed input, delegated",
            delegated.parent_billed,
            "direct",
            direct.parent_billed,
            unit="tokens",
            target=TARGET_PARENT_BILLED if at_target_size else None,
        ),  # fmt: skip
        Figure(
            "all billed input (child included), delegated",
            delegated.total_billed,
            "direct",
            direct.total_billed,
            unit="tokens",
        ),  # fmt: skip
    ]
    return exit_status(report("bench_subagents", figures))


if __name__ == "__main__":
    sys.exit(main())
