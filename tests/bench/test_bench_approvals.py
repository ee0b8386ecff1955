"""bench/bench_approvals.py: the figures it reports, from one quick round."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_modules import bench_module


def test_one_round_reports_every_figure_beside_the_old_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv("CATBUDDY_BENCH_ROWS", str(rows))
    with bench_module("bench_approvals") as bench:
        status = bench.main(1)
    figures = {row["name"]: row for row in map(json.loads, rows.read_text().splitlines())}
    assert status == 0
    safe = next(f for name, f in figures.items() if name.startswith("known-safe commands run unasked"))
    assert safe["value"] >= safe["target"] and safe["baseline"] == 0
    probes = next(f for name, f in figures.items() if name.startswith("escalation probes"))
    assert (probes["value"], probes["baseline"]) == (0, 12)  # the 12 of 14 before
    assert figures["exec approval decision, median"]["baseline"] > 0
