"""Run every benchmark in this folder, each in a fresh process, then print one summary table.

    python bench/run_all.py [--quick] [NAME ...]     # e.g. python bench/run_all.py --quick context governance

Each bench prints its own tables as it runs and hands its figures over through a rows file
(``CATBUDDY_BENCH_ROWS``, see ``_table.report``); ``--quick`` is passed on as ``CATBUDDY_BENCH_QUICK=1``.
The summary has one row per figure: bench, figure, measured, baseline (measured in the same run), ratio,
target and verdict (met, MISSED, or info when the figure has no target), plus a row for anything a bench
could not measure here. A missed target is reported, not a failure of this script: the exit status is
non-zero only when a bench crashed (exited with anything but 0 or ``_table.MISSED_EXIT``); a bench that
ran but handed over no figures is named under the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _table import FIGURE_HEADERS, MISSED_EXIT, QUICK_ENV, ROWS_ENV, Figure, figure_rows, print_table  # noqa: E402

SUMMARY_HEADERS = ["bench", *FIGURE_HEADERS]


@dataclass
class Summary:
    figures: list[Figure] = field(default_factory=list)
    unavailable: list[dict[str, str]] = field(default_factory=list)

    @property
    def missed(self) -> list[Figure]:
        return [f for f in self.figures if f.met is False]

    def rows(self) -> list[list[str]]:
        rows = figure_rows(self.figures, with_bench=True)
        for u in self.unavailable:
            rows.append([u["bench"], u["unavailable"], "—", f"unavailable: {u['reason']}", "—", "—", "—", "n/a"])
        return rows


def read_rows(path: Path) -> Summary:
    """The figures and unavailable rows the benches appended to ``path`` (one JSON object a line)."""
    summary = Summary()
    if not path.exists():
        return summary
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row: dict[str, Any] = json.loads(line)
        if "unavailable" in row:
            summary.unavailable.append(
                {"bench": str(row.get("bench", "")), "unavailable": str(row["unavailable"]),
                 "reason": str(row.get("reason", ""))}  # fmt: skip
            )
        else:
            summary.figures.append(Figure(**row))
    return summary


def print_summary(summary: Summary, crashed: Sequence[str] = (), seconds: float | None = None) -> None:
    took = f" in {seconds:.0f} s" if seconds is not None else ""
    print_table(f"Summary: every figure against its same-run baseline{took}", SUMMARY_HEADERS, summary.rows())
    met = sum(f.met is True for f in summary.figures)
    targets = sum(f.met is not None for f in summary.figures)
    print(f"targets met: {met} of {targets}; missed: {len(summary.missed)}; "
          f"unavailable: {len(summary.unavailable)}; crashed: {', '.join(crashed) or 'none'}")  # fmt: skip


def benches(names: Sequence[str]) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if names:
        found = [b for b in found if any(name in b.stem for name in names)]
    return found


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    names = [arg for arg in argv if arg != "--quick"]
    crashed: list[str] = []
    silent: list[str] = []  # ran but handed over no figures (its tables are above)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="catbuddy-bench-rows-") as tmp:
        rows_path = Path(tmp) / "rows.jsonl"
        for bench in benches(names):
            print(f"\n##### {bench.stem}{' (quick)' if quick else ''}\n", flush=True)
            env = {**os.environ, ROWS_ENV: str(rows_path)}
            env.pop(QUICK_ENV, None)
            if quick:
                env[QUICK_ENV] = "1"
            size_before = rows_path.stat().st_size if rows_path.exists() else 0
            status = subprocess.call([sys.executable, str(bench)], env=env)
            reported = (rows_path.stat().st_size if rows_path.exists() else 0) > size_before
            if status not in (0, MISSED_EXIT):
                crashed.append(f"{bench.stem} (exit {status})")
            elif not reported:
                silent.append(bench.stem)
        summary = read_rows(rows_path)
    print()
    print_summary(summary, crashed, time.perf_counter() - started)
    if silent:
        print(f"no figures handed over (not in the table; see their own output above): {', '.join(silent)}")
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
