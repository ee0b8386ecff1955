"""The checkpoint journal: one JSON line per turn that changed files, and per undo or redo of one.

It lives in the shadow repository's folder and only grows; whether a turn is undone is read from the
last undo/redo line naming it. A torn or foreign line is skipped.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TURN = "turn"
UNDO = "undo"
REDO = "redo"


@dataclass(frozen=True)
class TurnRecord:
    id: str  # "t1", "t2", … in the order turns ended
    session: str
    message_id: str  # the user message that started the turn
    before: str  # tree ids
    after: str
    ts: float


@dataclass
class TurnState:
    record: TurnRecord
    undone: bool = False
    changed_at: int = 0  # the journal line that last undid or redid it (0: never)


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _lines(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in raw:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("kind") in (TURN, UNDO, REDO):
                out.append(item)
        return out

    def turns(self) -> list[TurnState]:
        """Every recorded turn, oldest first, with whether it is undone now."""
        states: dict[str, TurnState] = {}
        for number, item in enumerate(self._lines(), 1):
            if item["kind"] == TURN:
                try:
                    record = TurnRecord(**{k: item[k] for k in TurnRecord.__dataclass_fields__})
                except (KeyError, TypeError):
                    continue
                states[record.id] = TurnState(record)
            elif item.get("turn") in states:
                state = states[item["turn"]]
                state.undone = item["kind"] == UNDO
                state.changed_at = number
        return list(states.values())

    def add_turn(self, session: str, message_id: str, before: str, after: str) -> TurnRecord:
        number = sum(1 for item in self._lines() if item["kind"] == TURN) + 1
        record = TurnRecord(f"t{number}", session, message_id, before, after, time.time())
        self._append({"kind": TURN, **asdict(record)})
        return record

    def mark(self, kind: str, turn_id: str) -> None:
        self._append({"kind": kind, "turn": turn_id, "ts": time.time()})

    def _append(self, item: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(item) + "\n")
            handle.flush()
