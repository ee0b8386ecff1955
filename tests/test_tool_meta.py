"""A tool call's stored outcome (catbuddy/tool_meta.py): written small, read back equal, and read
tolerantly — a record without one, or with one damaged on disk, reads as an unknown status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catbuddy.tool_meta import (
    Change,
    FactKind,
    LedgerFact,
    PathChange,
    ToolMeta,
    ToolStatus,
    describe_outcome,
)


def test_an_outcome_round_trips_through_json() -> None:
    meta = ToolMeta(
        ToolStatus.ERROR,
        summary="exit 1",
        exit_code=1,
        duration=0.25,
        paths=[PathChange("a.py", Change.MODIFIED, 2, None), PathChange("b", Change.DELETED, moved_to="c")],
        facts=[LedgerFact(FactKind.COMMAND, "make", "boom"), LedgerFact("newer", "x")],
        malformed="",
        extra={"sandbox": "off"},
    )
    assert ToolMeta.from_json(json.loads(json.dumps(meta.to_json()))) == meta


def test_only_what_is_set_is_written() -> None:
    assert ToolMeta(ToolStatus.OK).to_json() == {"status": "ok"}


@pytest.mark.parametrize("stored", [None, "ok", [], {}, {"status": "sideways"}, {"status": 3}])
def test_a_missing_or_damaged_outcome_reads_as_unknown(stored: Any) -> None:
    meta = ToolMeta.from_json(stored)
    assert meta.status is ToolStatus.UNKNOWN and not meta.failed


def test_damaged_parts_are_left_out_and_the_rest_is_kept() -> None:
    meta = ToolMeta.from_json(
        {
            "status": "ok",
            "exit_code": "0",
            "duration": -1,
            "paths": [
                {"path": "a.py", "change": "modified", "added": -3},
                {"path": 7},
                "x",
                {"path": "b", "change": "?"},
            ],
            "facts": [{"kind": "read", "value": "a.py"}, {"kind": "read"}, None],
            "extra": ["not", "a", "dict"],
        }
    )
    assert meta.status is ToolStatus.OK and meta.exit_code is None and meta.duration is None
    assert meta.paths == [PathChange("a.py", Change.MODIFIED, None, None)]
    assert meta.facts == [LedgerFact(FactKind.READ, "a.py")] and meta.extra == {}


@pytest.mark.parametrize(
    ("meta", "line"),
    [
        (ToolMeta(ToolStatus.OK), ""),
        (ToolMeta(ToolStatus.ERROR, exit_code=2), "exit 2"),
        (ToolMeta(ToolStatus.ERROR), "error"),
        (ToolMeta(ToolStatus.REFUSED), "refused"),
        (ToolMeta(ToolStatus.DENIED), "denied"),
        (ToolMeta(ToolStatus.STOPPED), "stopped"),
        (ToolMeta(ToolStatus.TIMED_OUT), "timed out"),
        (ToolMeta(ToolStatus.OK, paths=[PathChange("a.py", Change.CREATED, 3, 0)]), "created a.py +3"),
        (ToolMeta(ToolStatus.OK, paths=[PathChange("a", Change.DELETED)] * 2), "2 files changed"),
    ],
)
def test_the_generic_line_says_how_a_call_ended(meta: ToolMeta, line: str) -> None:
    assert describe_outcome(meta) == line
