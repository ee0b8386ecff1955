"""Calibration: how many tokens the provider really counts for what we count (DESIGN §3).

Providers whose tokenizer differs from tiktoken (Claude, DeepSeek, Qwen, local models) report
``usage.prompt_tokens``. The ratio reported / counted is kept per model and applied to budget checks
when it is above 1, so the budget holds on any provider. It is stored in the global home so
`catbuddy context` can show it and the next session starts calibrated.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
# Small requests are dominated by fixed overheads we may count differently; ignore them.
MIN_TOKENS_FOR_SAMPLE = 200
# New observations move the ratio this much; a higher observation is taken at once (never under-count).
SMOOTHING = 0.3
MAX_RATIO = 4.0


@dataclass
class CalibrationStore:
    path: Path

    @classmethod
    def in_home(cls, home: Path) -> CalibrationStore:
        return cls(home / CALIBRATION_FILE)

    def _load(self) -> dict[str, float]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return (
            {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}
            if isinstance(data, dict)
            else {}
        )

    def ratio(self, model: str) -> float:
        """The raw ratio (may be below 1); 1.0 when never observed."""
        return self._load().get(model, 1.0)

    def factor(self, model: str) -> float:
        """What budget checks multiply our counts by: the ratio when above 1, else 1."""
        return max(1.0, self.ratio(model))

    def observe(self, model: str, reported: int, counted: int) -> float:
        if counted < MIN_TOKENS_FOR_SAMPLE or reported <= 0:
            return self.ratio(model)
        observed = min(MAX_RATIO, reported / counted)
        data = self._load()
        old = data.get(model)
        new = observed if old is None or observed > old else old + SMOOTHING * (observed - old)
        data[model] = round(new, 4)
        self._save(data)
        return new

    def raise_to(self, model: str, ratio: float) -> float:
        """After a context-length error: make the next checks at least this strict."""
        data = self._load()
        data[model] = round(min(MAX_RATIO, max(ratio, data.get(model, 1.0))), 4)
        self._save(data)
        return data[model]

    def _save(self, data: dict[str, float]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:  # calibration is an optimisation; never fail a turn over it
            log.warning("cannot save calibration to %s: %s", self.path, exc)
