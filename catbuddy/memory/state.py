"""Dream's own state, kept in ``memory/dream_state.json``: failures in a row (three pause automatic Dream
until it is run by hand) and what the last run did, for ``/context`` and ``catbuddy context``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.memory.files import atomic_write


@dataclass
class LastDream:
    at: str
    status: str  # applied, unchanged, failed, skipped, …
    message: str
    added: int = 0
    removed: int = 0
    updated: int = 0
    entries: int = 0
    change: int | None = None  # the version log's change id of what it wrote


@dataclass
class DreamState:
    failures: int = 0
    last: LastDream | None = None
    problems: list[str] = field(default_factory=list)  # reading the file, not saved

    def paused(self, limit: int) -> bool:
        return self.failures >= limit

    @classmethod
    def load(cls, path: Path) -> DreamState:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            return cls(problems=[f"{path} is unreadable ({exc}); starting from a clean Dream state"])
        if not isinstance(data, dict):
            return cls(problems=[f"{path} does not hold an object; starting from a clean Dream state"])
        failures = data.get("failures")
        last = data.get("last")
        state = cls(failures=failures if isinstance(failures, int) and failures >= 0 else 0)
        if isinstance(last, dict):
            try:
                state.last = LastDream(
                    **{k: v for k, v in last.items() if k in LastDream.__dataclass_fields__}
                )
            except TypeError:
                state.problems.append(f"{path}: the last Dream's record is incomplete; ignored")
        return state

    def save(self, path: Path) -> None:
        data: dict[str, Any] = {"failures": self.failures, "last": asdict(self.last) if self.last else None}
        atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
