"""Hostile sizes for the tools and the session reader (issue 15 targets).

    python bench/bench_tools.py

1. HTML → Markdown, the linear converter against a pinned copy of the earlier (quadratic) one
   (``_html_to_markdown_v1.py``) on the same inputs in the same run. Targets: 0.8 MB of page in
   ≤ 1 s, and the time per MB not growing with the size (the 0.8 MB / 0.2 MB ratio ≤ 1.5).
2. read_file on a file of 256 MB without a single newline. Targets: ≤ 2 s, ≤ 16 MB of Python memory.
3. Reading a 50 MB session (read_session_file + rebuild_history from the latest compaction).
   Target: ≤ 3 s.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _html_to_markdown_v1 import html_to_markdown as html_to_markdown_v1  # noqa: E402
from _table import Figure, exit_status, print_table, report  # noqa: E402

from catbuddy.config import Settings  # noqa: E402
from catbuddy.session.history import rebuild_history  # noqa: E402
from catbuddy.session.records import read_session_file  # noqa: E402
from catbuddy.tools.base import ToolContext  # noqa: E402
from catbuddy.tools.files import ReadFileTool  # noqa: E402
from catbuddy.tools.html_to_markdown import html_to_markdown  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

HTML_SIZES_KB = (200, 400, 800)
HTML_TARGET_S = 1.0
GROWTH_TARGET = 1.5  # seconds per MB at 0.8 MB over seconds per MB at 0.2 MB
READ_FILE_MB = 256
READ_TARGET_S = 2.0
READ_MEMORY_TARGET_MB = 16
SESSION_MB = 50
SESSION_TARGET_S = 3.0


def page(size: int, seed: int = 3) -> str:
    """A realistic page: headings, paragraphs with links and emphasis, lists, tables, code, quotes."""
    rng = random.Random(seed)
    parts = ["<html><head><title>Big page</title><style>p{}</style></head><body>"]
    total = 0
    i = 0
    while total < size:
        i += 1
        block = rng.choice(
            [
                f"<h2>Section {i}</h2><p>Some <b>bold</b> and <a href='/x/{i}'>a link</a> in text {i}. "
                + "words " * 20
                + "</p>",
                "<ul>" + "".join(f"<li>item {j} <em>em</em></li>" for j in range(8)) + "</ul>",
                "<table><tr><th>a</th><th>b</th></tr>"
                + "".join(f"<tr><td>{j}</td><td>v{j}</td></tr>" for j in range(6))
                + "</table>",
                f"<pre><code class='language-python'>def f{i}():\n    return {i}\n</code></pre>",
                "<div><div><p>nested " + "text " * 30 + "</p></div></div>",
                "<blockquote><p>quoted " + "q " * 20 + "</p></blockquote>",
            ]
        )
        parts.append(block)
        total += len(block)
    parts.append("</body></html>")
    return "".join(parts)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_html() -> list[Figure]:
    figures: list[Figure] = []
    rows: list[list[Any]] = []
    per_mb: dict[int, float] = {}
    for kb in HTML_SIZES_KB:
        html = page(kb * 1000)
        new_s, new_out = timed(lambda html=html: html_to_markdown(html, "https://example.com/"))
        old_s, old_out = timed(lambda html=html: html_to_markdown_v1(html, "https://example.com/"))
        per_mb[kb] = new_s / (kb / 1000)
        figures.append(Figure(f"HTML → Markdown, {kb} KB page", new_s, "earlier converter (pinned), same input",
                              old_s, unit="s", target=HTML_TARGET_S if kb == max(HTML_SIZES_KB) else None,
                              kind="value"))  # fmt: skip
        target = f"≤ {HTML_TARGET_S} s" if kb == max(HTML_SIZES_KB) else ""
        ok = new_s <= HTML_TARGET_S if target else ""
        rows.append(
            [
                f"{kb} KB page",
                round(old_s, 3),
                round(new_s, 3),
                round(old_s / new_s, 1),
                new_out == old_out,
                target,
                ok,
            ]
        )
    flat = "<p>hello world</p>" * 15_000  # 270 KB of flat paragraphs: the old converter's worst case
    new_s, new_out = timed(lambda: html_to_markdown(flat))
    old_s, old_out = timed(lambda: html_to_markdown_v1(flat))
    rows.append(
        [
            "270 KB of <p>",
            round(old_s, 3),
            round(new_s, 3),
            round(old_s / new_s, 1),
            new_out == old_out,
            "",
            "",
        ]
    )
    figures.append(Figure("HTML → Markdown, 270 KB of <p>", new_s, "earlier converter (pinned), same input", old_s,
                          unit="s"))  # fmt: skip
    growth = per_mb[max(HTML_SIZES_KB)] / per_mb[min(HTML_SIZES_KB)]
    figures.append(Figure(f"HTML → Markdown s/MB at {max(HTML_SIZES_KB)} KB", per_mb[max(HTML_SIZES_KB)],
                          f"s/MB at {min(HTML_SIZES_KB)} KB, same run", per_mb[min(HTML_SIZES_KB)], unit="s",
                          target=GROWTH_TARGET))  # fmt: skip
    rows.append(
        [
            "growth s/MB 0.8 vs 0.2 MB",
            "",
            round(growth, 2),
            "",
            "",
            f"≤ {GROWTH_TARGET}",
            growth <= GROWTH_TARGET,
        ]
    )
    print_table(
        "HTML → Markdown: earlier converter (pinned copy) vs now, same input, same run",
        ["input", "before s", "after s", "speed-up ×", "same output", "target", "ok"],
        rows,
    )
    return figures


def read_in_chunks(path: Path) -> int:
    """The floor of reading a file: its bytes, 1 MB at a time."""
    total = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            total += len(chunk)
    return total


def bench_read_file() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        block = b"abcdefgh" * (1024 * 128)  # 1 MB, no newline
        with (root / "one-line.txt").open("wb") as handle:
            for _ in range(READ_FILE_MB):
                handle.write(block)
        ctx = ToolContext(Workspace(work_root=root, home=Path(tmp) / "home"), Settings())
        tracemalloc.start()
        seconds, result = timed(lambda: asyncio.run(ReadFileTool().run({"path": "one-line.txt"}, ctx)))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        floor_s, _ = timed(lambda: read_in_chunks(root / "one-line.txt"))
    peak_mb = peak / 1e6
    print_table(
        f"read_file on {READ_FILE_MB} MB without a newline ({len(result.content):,} characters returned)",
        ["measure", "value", "target", "ok"],
        [
            ["seconds", round(seconds, 2), f"≤ {READ_TARGET_S}", seconds <= READ_TARGET_S],
            [
                "peak Python memory MB",
                round(peak_mb, 2),
                f"≤ {READ_MEMORY_TARGET_MB}",
                peak_mb <= READ_MEMORY_TARGET_MB,
            ],
        ],
    )
    return [
        Figure(f"read_file, {READ_FILE_MB} MB without a newline", seconds, "read its bytes in 1 MB chunks", floor_s,
               unit="s", target=READ_TARGET_S, kind="value"),
        Figure("read_file peak Python memory", peak_mb, "the file's size", float(READ_FILE_MB), unit="MB",
               target=READ_MEMORY_TARGET_MB, kind="value"),
    ]  # fmt: skip


def write_session(path: Path, size: int) -> int:
    """A session of tool-heavy turns with a compaction every 12 turns; returns its message count."""
    rng = random.Random(1)
    code = "".join(f"def f{i}(x):\n    return {{'k{i}': [x, {i}]}}\n" for i in range(400))
    meta = {
        "type": "meta",
        "session_id": path.stem,
        "created_at": "",
        "work_root": "/p",
        "model": "gpt-4o",
        "catbuddy_version": "0",
    }
    lines = [json.dumps(meta)]
    written = len(lines[0])
    n = 0

    def message(**fields: Any) -> str:
        nonlocal n
        n += 1
        return json.dumps({"type": "message", "id": f"m{n:06d}", "ts": None, **fields}, separators=(",", ":"))

    turn = 0
    while written < size:
        turn += 1
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": "{}"},
        }
        block = [
            message(role="user", content=f"turn {turn}: look at file {turn}.py"),
            message(role="assistant", content=None, tool_calls=[call]),
            message(role="tool", tool_call_id=f"call_{turn}", content=code[: rng.randint(5000, 30000)]),
            message(role="assistant", content="I looked at it. " * 30),
        ]
        if turn % 12 == 0:
            block.append(
                json.dumps(
                    {
                        "type": "compaction",
                        "id": f"c{turn:06d}",
                        "ts": None,
                        "summary": "S " * 500,
                        "folded_through": f"m{n - 24:06d}",
                    }
                )
            )
        lines += block
        written += sum(len(line) + 1 for line in block)
    path.write_text("\n".join(lines) + "\n")
    return n


def bench_session() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        messages = write_session(path, SESSION_MB * 1_000_000)
        seconds, history = timed(lambda: rebuild_history(read_session_file(path).records))
        floor_s, _ = timed(lambda: [json.loads(line) for line in path.read_bytes().splitlines() if line])
    print_table(
        f"Opening a {SESSION_MB} MB session ({messages:,} messages; {len(history.entries)} after the latest summary)",
        ["measure", "value", "target", "ok"],
        [["read + rebuild seconds", round(seconds, 2), f"≤ {SESSION_TARGET_S}", seconds <= SESSION_TARGET_S]],
    )
    return [Figure(f"open a {SESSION_MB} MB session (read + rebuild)", seconds, "json.loads every line, same file",
                   floor_s, unit="s", target=SESSION_TARGET_S, kind="value")]  # fmt: skip


def main() -> int:
    figures = bench_html() + bench_read_file() + bench_session()
    return exit_status(report("bench_tools", figures))


if __name__ == "__main__":
    raise SystemExit(main())
