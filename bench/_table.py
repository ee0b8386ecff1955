"""Shared by the benchmarks: aligned plain-text tables, and figures printed beside their baselines.

Every figure a bench reports is a ``Figure``: what was measured, a baseline measured in the same run
under the same conditions, their ratio, and the target. ``report`` prints a bench's figures as a table
and, when ``bench/run_all.py`` runs the bench, hands them over for its one summary table (one JSON line
each, appended to the file named by ``CATBUDDY_BENCH_ROWS``). Adding a bench to the summary is one
``report(...)`` call at its end.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

ROWS_ENV = "CATBUDDY_BENCH_ROWS"  # set by run_all.py: where report() appends its figures
QUICK_ENV = "CATBUDDY_BENCH_QUICK"  # set by run_all.py --quick: fewer samples, smaller sizes

MISSED_EXIT = 3  # a bench's exit status when it ran to the end but missed a target (not a crash)

Kind = Literal["ratio", "value"]


def quick() -> bool:
    """A fast pass was asked for (``--quick`` on this bench's command line, or run_all.py --quick)."""
    return "--quick" in sys.argv or os.environ.get(QUICK_ENV) == "1"


def without_quick(argv: Sequence[str]) -> list[str]:
    """``argv`` minus ``--quick``, for benches that parse their own arguments."""
    return [arg for arg in argv if arg != "--quick"]


@dataclass
class Figure:
    """One measured figure beside its same-run baseline.

    The target is a bound on the ratio (``kind="ratio"``: value / baseline) or on the value itself
    (``kind="value"``, in ``unit``); ``at_most`` says which side is good. ``target=None``: shown for
    information, no verdict."""

    name: str
    value: float
    baseline_name: str
    baseline: float
    unit: str = "ms"
    target: float | None = None
    kind: Kind = "ratio"
    at_most: bool = True
    bench: str = ""

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        measured = self.ratio if self.kind == "ratio" else self.value
        return measured <= self.target if self.at_most else measured >= self.target

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "—"
        sign = "≤" if self.at_most else "≥"
        if self.kind == "ratio":
            return f"{sign} {self.target:g}×"
        return f"{sign} {self.target:g} {self.unit}"

    @property
    def verdict(self) -> str:
        return {None: "info", True: "met", False: "MISSED"}[self.met]


def number(value: float, unit: str = "") -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "n/a"
    magnitude = abs(value)
    if not unit and float(value).is_integer():
        return f"{int(value):,}"  # a count
    text = f"{value:,.0f}" if magnitude >= 100 else f"{value:,.1f}" if magnitude >= 10 else f"{value:,.2f}"
    return f"{text} {unit}".rstrip()


def ratio_text(ratio: float) -> str:
    """×0.501, ×1.20, ×33.0: three significant figures below 100, so a ratio near its target reads right."""
    if ratio != ratio or ratio in (float("inf"), float("-inf")):
        return "×n/a"
    return f"×{ratio:,.0f}" if abs(ratio) >= 100 else f"×{ratio:.3g}" if ratio else "×0"


def figure_rows(figures: Sequence[Figure], with_bench: bool = False) -> list[list[str]]:
    rows = []
    for f in figures:
        row = [f.name, number(f.value, f.unit), f.baseline_name, number(f.baseline, f.unit),
               ratio_text(f.ratio), f.target_text, f.verdict]
        rows.append([f.bench, *row] if with_bench else row)
    return rows


FIGURE_HEADERS = ["figure", "measured", "baseline (same run)", "baseline", "ratio", "target", "verdict"]


def hand_over(rows: Sequence[dict[str, Any]]) -> None:
    """Append rows for run_all.py's summary (one JSON object a line), when it runs this bench."""
    path = os.environ.get(ROWS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)


def report(bench: str, figures: Sequence[Figure], title: str | None = None) -> bool:
    """Print the figures beside their baselines; pass them on to run_all.py. True if no target missed."""
    for f in figures:
        f.bench = bench
    print_table(title or f"{bench}: figures against same-run baselines", FIGURE_HEADERS, figure_rows(figures))
    hand_over([asdict(f) for f in figures])
    return all(f.met is not False for f in figures)


def exit_status(ok: bool) -> int:
    """What a bench's main returns: 0, or ``MISSED_EXIT`` when ``report`` said a target was missed."""
    return 0 if ok else MISSED_EXIT


def unavailable(bench: str, what: str, reason: str) -> None:
    """A row that could not be measured here (e.g. a peer's package could not be fetched)."""
    print(f"{what} unavailable: {reason}")
    hand_over([{"bench": bench, "unavailable": what, "reason": reason}])


def format_cell(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Numbers are right-aligned, text left-aligned; every column as wide as its widest cell."""
    cells = [[format_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells but there are {len(headers)} headers: {row}")
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [
        all(isinstance(row[i], int | float) and not isinstance(row[i], bool) for row in rows)
        if rows
        else False
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    print(title)
    print(line(list(headers)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))
    print()
