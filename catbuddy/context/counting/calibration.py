"""Calibration: how many tokens the provider really counts for what we count (docs/architecture.md §3).

Providers whose tokenizer differs from tiktoken (Claude, DeepSeek, Qwen, local models) report
``usage.prompt_tokens``. The ratio reported ÷ counted is kept per model and applied to budget checks
when it is above 1, so the budget holds on any provider. It is stored in the global home so
`catbuddy context` can show it and the next session starts calibrated.

It is learned only from usage reports, never from the numbers in an error message (a proxy with a
smaller window would poison the budget of every later session), and it is bounded: one observation
moves it up at most ×1.5, and lower observations pull it back down. A context-length error tightens
the budget for the running process only. The file is read once and written only when a value changed.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
# Small requests are dominated by fixed overheads we may count differently; ignore them.
MIN_TOKENS_FOR_SAMPLE = 200
MAX_STEP_UP = 1.5  # one observation raises the ratio at most this much
SMOOTHING = 0.3  # share of the gap to a lower observation closed per observation
MIN_RATIO, MAX_RATIO = 0.25, 4.0
OVERFLOW_STEP = 1.15  # after a context-length error we could not explain: this process only
MAX_OVERFLOW_TIGHTENING = 1.5
WRITE_PRECISION = 4  # decimals kept on disk; smaller changes are not written


@dataclass(frozen=True)
class ModelCalibration:
    """What is known about one model: the ratio, and where it came from."""

    ratio: float = 1.0
    samples: int = 0  # usage reports it was learned from (0: never observed, or an older file)
    last_observed: float | None = None
    updated: str = ""

    @property
    def factor(self) -> float:
        """What budget checks multiply our counts by: the ratio when above 1, else 1."""
        return max(1.0, self.ratio)

    def describe(self) -> str:
        if self.samples == 0 and self.ratio == 1.0:
            return "×1.00 (no usage report yet)"
        if self.samples == 0:
            return f"×{self.ratio:.2f} (from an older calibration file; the next usage report replaces it)"
        last = f", last ×{self.last_observed:.2f}" if self.last_observed is not None else ""
        when = f" on {self.updated[:10]}" if self.updated else ""
        reports = "report" if self.samples == 1 else "reports"
        return f"×{self.ratio:.2f} (learned from {self.samples} usage {reports}{last}{when})"

    def to_json(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "samples": self.samples,
            "last_observed": self.last_observed,
            "updated": self.updated,
        }


def next_calibration(old: ModelCalibration, observed: float, now: str) -> ModelCalibration:
    """The calibration after one usage report: bounded up, decaying down, and a prior of unknown
    provenance (``samples == 0``) is replaced rather than trusted."""
    observed = min(MAX_RATIO, max(MIN_RATIO, observed))
    if old.samples == 0:
        ratio = min(observed, MAX_STEP_UP) if observed > 1.0 else observed
    elif observed > old.ratio:
        ratio = min(observed, old.ratio * MAX_STEP_UP)
    else:
        ratio = old.ratio + SMOOTHING * (observed - old.ratio)
    return ModelCalibration(
        round(ratio, WRITE_PRECISION), old.samples + 1, round(observed, WRITE_PRECISION), now
    )


class CalibrationStore:
    """Per-model calibrations, loaded from the home once and kept in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._models: dict[str, ModelCalibration] | None = None
        self._tightened: dict[str, float] = {}  # this process only, after context-length errors

    @classmethod
    def in_home(cls, home: Path) -> CalibrationStore:
        return cls(home / CALIBRATION_FILE)

    def _loaded(self) -> dict[str, ModelCalibration]:
        if self._models is None:
            self._models = _read(self.path)
        return self._models

    def get(self, model: str) -> ModelCalibration:
        return self._loaded().get(model, ModelCalibration())

    def ratio(self, model: str) -> float:
        """The learned ratio (may be below 1); 1.0 when never observed."""
        return self.get(model).ratio

    def factor(self, model: str) -> float:
        """What budget checks multiply our counts by (never below 1)."""
        return self.get(model).factor * self._tightened.get(model, 1.0)

    def observe(self, model: str, reported: int, counted: int) -> float:
        """Learn from one usage report; returns the ratio now in force."""
        if counted < MIN_TOKENS_FOR_SAMPLE or reported <= 0:
            return self.ratio(model)
        old = self.get(model)
        new = next_calibration(old, reported / counted, datetime.now(UTC).isoformat(timespec="seconds"))
        self._tightened.pop(model, None)  # a real report supersedes the guess made after an error
        self._loaded()[model] = new
        if new.ratio != old.ratio or old.samples == 0:
            self._save()
        return new.ratio

    def tighten(self, model: str) -> float:
        """After a context-length error our counts could not explain: count more strictly in this
        process. Not written: the error may come from a proxy with a smaller window."""
        step = min(MAX_OVERFLOW_TIGHTENING, self._tightened.get(model, 1.0) * OVERFLOW_STEP)
        self._tightened[model] = step
        return self.factor(model)

    def _save(self) -> None:
        data = {model: item.to_json() for model, item in sorted(self._loaded().items())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:  # calibration is an optimisation; never fail a turn over it
            log.warning("cannot save calibration to %s: %s", self.path, exc)


def _read(path: Path) -> dict[str, ModelCalibration]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    models: dict[str, ModelCalibration] = {}
    for model, value in data.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            item = ModelCalibration(float(value))  # an older file: one bare ratio, provenance unknown
        elif isinstance(value, dict) and isinstance(value.get("ratio"), int | float):
            samples = value.get("samples")
            last = value.get("last_observed")
            item = ModelCalibration(
                float(value["ratio"]),
                samples if isinstance(samples, int) and samples >= 0 else 0,
                float(last) if isinstance(last, int | float) else None,
                str(value.get("updated") or ""),
            )
        else:
            continue
        models[str(model)] = replace(item, ratio=min(MAX_RATIO, max(MIN_RATIO, item.ratio)))
    return models
