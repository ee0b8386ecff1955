"""bench/bench_checkpoint.py on a tiny tree: it reports the turn's checkpoints beside git status, and undo."""

from __future__ import annotations

import json

from bench_modules import bench_module


def test_the_bench_reports_its_figures_beside_git_status(tmp_path, monkeypatch, capsys):
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv("CATBUDDY_BENCH_ROWS", str(rows))
    with bench_module("bench_checkpoint") as bench:
        bench.main(files=120, megabytes=1, turns=2)
    figures = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [f["name"] for f in figures] == [
        "checkpoints of a turn touching 3 files (before + after)",
        "checkpoints of a turn whose command touched 3 files",
        "undo of that turn (plan + restore)",
        "first checkpoint of the project (once)",
    ]
    assert all(f["value"] > 0 and f["baseline"] > 0 for f in figures)
    assert figures[0]["target"] == 2.0 and "git status" in figures[0]["baseline_name"]
    assert "checkpoints on 120 files / 1 MB" in capsys.readouterr().out
