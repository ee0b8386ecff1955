"""Calibration: learned from usage reports only, bounded, decaying, shown with its origin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catbuddy.context.counting.calibration import MAX_STEP_UP, CalibrationStore


def store(tmp_path: Path) -> CalibrationStore:
    return CalibrationStore(tmp_path / "calibration.json")


def test_a_model_never_observed_counts_as_we_count(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    assert calibration.factor("gpt-4o") == 1.0
    assert "no usage report yet" in calibration.get("gpt-4o").describe()


def test_one_observation_raises_the_ratio_at_most_one_step(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.observe("m", reported=4000, counted=1000)
    assert calibration.factor("m") == pytest.approx(MAX_STEP_UP)


def test_repeated_high_observations_climb_step_by_step(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    for _ in range(3):
        calibration.observe("m", reported=3000, counted=1000)
    assert calibration.factor("m") == pytest.approx(3.0)


def test_lower_observations_pull_the_ratio_back_down(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.observe("m", reported=1400, counted=1000)
    for _ in range(20):
        calibration.observe("m", reported=1000, counted=1000)
    assert calibration.factor("m") == pytest.approx(1.0, abs=0.01)


def test_small_requests_teach_nothing(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.observe("m", reported=300, counted=100)
    assert calibration.factor("m") == 1.0 and not (tmp_path / "calibration.json").exists()


def test_an_overflow_tightens_this_process_only(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    tightened = calibration.tighten("m")
    assert tightened > 1.0
    assert CalibrationStore(tmp_path / "calibration.json").factor("m") == 1.0  # a new process: untouched


def test_repeated_overflows_stay_bounded(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    for _ in range(20):
        calibration.tighten("m")
    assert calibration.factor("m") <= 1.5


def test_a_usage_report_replaces_the_overflow_guess(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.tighten("m")
    calibration.observe("m", reported=1000, counted=1000)
    assert calibration.factor("m") == 1.0


def test_a_poisoned_older_file_is_replaced_by_the_first_real_report(tmp_path: Path) -> None:
    (tmp_path / "calibration.json").write_text(json.dumps({"gpt-4o": 4.0}))
    calibration = store(tmp_path)
    assert "older calibration file" in calibration.get("gpt-4o").describe()
    calibration.observe("gpt-4o", reported=1010, counted=1000)
    assert calibration.factor("gpt-4o") == pytest.approx(1.01)


def test_the_file_keeps_where_the_ratio_came_from(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.observe("m", reported=1200, counted=1000)
    calibration.observe("m", reported=1100, counted=1000)
    saved = json.loads((tmp_path / "calibration.json").read_text())["m"]
    assert saved["samples"] == 2 and saved["last_observed"] == 1.1
    assert "learned from 2 usage reports" in CalibrationStore(tmp_path / "calibration.json").get("m").describe()


def test_an_unchanged_ratio_is_not_written_again(tmp_path: Path) -> None:
    calibration = store(tmp_path)
    calibration.observe("m", reported=1000, counted=1000)
    path = tmp_path / "calibration.json"
    stamp = path.stat().st_mtime_ns
    path.write_text(path.read_text())  # same content, new mtime marker below
    marker = path.stat().st_mtime_ns
    calibration.observe("m", reported=1000, counted=1000)
    assert path.stat().st_mtime_ns == marker and marker >= stamp


def test_a_damaged_file_means_no_calibration(tmp_path: Path) -> None:
    (tmp_path / "calibration.json").write_bytes(b"\xff\xfe not json")
    assert store(tmp_path).factor("m") == 1.0
