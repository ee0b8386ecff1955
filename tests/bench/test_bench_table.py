"""bench/_table.py's verdicts and bench/run_all.py's summary, read back from a rows file."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from bench_modules import BENCH, bench_module


@pytest.fixture(scope="module")
def table():
    with bench_module("_table") as module:
        yield module


@pytest.fixture(scope="module")
def run_all(table):
    with bench_module("run_all") as module:
        yield module


def test_a_ratio_target_is_held_to_value_over_baseline(table):
    fast = table.Figure("x", 2.0, "peer", 100.0, target=0.05)
    slow = table.Figure("x", 6.0, "peer", 100.0, target=0.05)
    assert fast.ratio == pytest.approx(0.02)
    assert (fast.met, fast.verdict) == (True, "met")
    assert (slow.met, slow.verdict) == (False, "MISSED")
    assert fast.target_text == "≤ 0.05×"


def test_a_value_target_ignores_the_baseline(table):
    # 9 ms against a 1 ms baseline is ×9, but the target is on the 9 ms itself
    figure = table.Figure("overhead", 9.0, "empty", 1.0, target=10.0, kind="value")
    assert figure.met is True
    assert table.Figure("overhead", 10.5, "empty", 100.0, target=10.0, kind="value").met is False
    assert figure.target_text == "≤ 10 ms"


def test_at_least_targets_and_figures_without_a_target(table):
    assert table.Figure("reuse", 0.9, "b", 1.0, target=0.8, at_most=False).met is True
    assert table.Figure("reuse", 0.7, "b", 1.0, target=0.8, at_most=False).met is False
    info = table.Figure("info", 1.0, "b", 2.0)
    assert (info.met, info.verdict, info.target_text) == (None, "info", "—")


def test_a_zero_baseline_gives_an_infinite_ratio_not_a_crash(table):
    figure = table.Figure("x", 1.0, "b", 0.0, target=2.0)
    assert figure.ratio == float("inf") and figure.met is False
    assert table.number(figure.ratio) == "n/a" and table.ratio_text(figure.ratio) == "×n/a"


def test_a_ratio_just_past_its_target_does_not_read_as_on_it(table):
    assert table.ratio_text(1_969_185 / 3_930_928) == "×0.501"
    assert (table.ratio_text(1.2), table.ratio_text(33.04), table.ratio_text(1234.5)) == ("×1.2", "×33", "×1,234")


def test_report_appends_rows_and_says_whether_every_target_was_met(table, tmp_path, monkeypatch, capsys):
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv(table.ROWS_ENV, str(rows))
    ok = table.report("bench_x", [table.Figure("a", 1.0, "b", 2.0, target=1.0), table.Figure("c", 1.0, "d", 1.0)])
    missed = table.report("bench_y", [table.Figure("e", 3.0, "f", 1.0, target=2.0)])
    table.unavailable("bench_y", "peer row", "not installed")
    assert (ok, missed) == (True, False)
    assert table.exit_status(ok) == 0 and table.exit_status(missed) == table.MISSED_EXIT
    lines = [json.loads(line) for line in rows.read_text().splitlines()]
    assert [line.get("bench") for line in lines] == ["bench_x", "bench_x", "bench_y", "bench_y"]
    assert lines[-1] == {"bench": "bench_y", "unavailable": "peer row", "reason": "not installed"}
    assert "MISSED" in capsys.readouterr().out


def test_run_all_summarises_a_rows_file(table, run_all, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    figures = [
        table.Figure("harness ms", 8.0, "empty history", 1.0, target=10.0, kind="value", bench="bench_harness"),
        table.Figure("governance", 5.0, "nanobot", 50.0, target=0.05, bench="bench_governance"),
        table.Figure("info row", 1.0, "b", 4.0, bench="bench_context"),
    ]
    with rows.open("w") as handle:
        for f in figures:
            handle.write(json.dumps(f.__dict__) + "\n")
        handle.write("\n")
        handle.write(json.dumps({"bench": "bench_governance", "unavailable": "peer", "reason": "no venv"}) + "\n")

    summary = run_all.read_rows(rows)
    assert [f.verdict for f in summary.figures] == ["met", "MISSED", "info"]
    assert [f.name for f in summary.missed] == ["governance"]
    table_rows = summary.rows()
    assert table_rows[1] == ["bench_governance", "governance", "5.00 ms", "nanobot", "50.0 ms", "×0.1",
                             "≤ 0.05×", "MISSED"]  # fmt: skip
    assert table_rows[-1][0:2] == ["bench_governance", "peer"] and "unavailable: no venv" in table_rows[-1][3]

    run_all.print_summary(summary, crashed=["bench_x (exit 1)"])
    out = capsys.readouterr().out
    assert "targets met: 1 of 2; missed: 1; unavailable: 1; crashed: bench_x (exit 1)" in out


def test_run_all_exits_non_zero_only_for_a_crash(tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    for name in ("_table.py", "run_all.py"):
        (folder / name).write_text((BENCH / name).read_text())
    prelude = "from _table import Figure, exit_status, report\n"  # a script's folder is on its sys.path
    (folder / "bench_missed.py").write_text(
        prelude + "raise SystemExit(exit_status(report('bench_missed', [Figure('m', 3.0, 'b', 1.0, target=2.0)])))\n"
    )
    (folder / "bench_met.py").write_text(prelude + "report('bench_met', [Figure('ok', 1.0, 'b', 1.0, target=2.0)])\n")
    missed_only = subprocess.run([sys.executable, str(folder / "run_all.py")], capture_output=True, text=True)
    assert missed_only.returncode == 0, missed_only.stderr
    assert "MISSED" in missed_only.stdout and "crashed: none" in missed_only.stdout

    (folder / "bench_crash.py").write_text("raise RuntimeError('boom')\n")
    crashed = subprocess.run([sys.executable, str(folder / "run_all.py"), "--quick"], capture_output=True, text=True)
    assert crashed.returncode == 1
    assert "crashed: bench_crash (exit 1)" in crashed.stdout
    assert "bench_met" in crashed.stdout and "bench_missed" in crashed.stdout  # the others still ran
