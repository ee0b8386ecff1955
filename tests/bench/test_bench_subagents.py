"""bench/bench_subagents.py's scripted exploration does what it says: the direct run reads every file in
the parent, the delegated run reads them in a child and hands the parent one answer."""

from __future__ import annotations

import asyncio

from bench_modules import bench_module


def test_delegation_moves_the_reading_into_the_child() -> None:
    with bench_module("bench_subagents") as bench:
        direct = asyncio.run(bench.explore(6, delegate=False))
        delegated = asyncio.run(bench.explore(6, delegate=True))

    assert direct.child_requests == 0 and direct.parent_requests == 3  # two replies of reads, one answer
    assert delegated.parent_requests == 2 and delegated.child_requests == 3
    assert delegated.parent_largest < direct.parent_largest
