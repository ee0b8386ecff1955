"""Memory fixtures: a workspace on disk, its memory paths, and a scripted server for Dream requests."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from catbuddy.llm.provider import Provider
from catbuddy.memory.journal import Journal
from catbuddy.memory.paths import MemoryPaths
from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.workspace import Workspace

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Provider, "backoff_base", 0.01)
    monkeypatch.setattr(Provider, "retry_after_cap", 0.05)


@pytest.fixture
def paths(workspace: Workspace) -> MemoryPaths:
    workspace.ensure_home()
    return MemoryPaths.of(workspace)


@pytest.fixture
def journal(paths: MemoryPaths) -> Journal:
    return Journal(paths)


@pytest.fixture
async def loops(workspace: Workspace) -> AsyncIterator[object]:
    """``loop, events = await loops(llm, background=False, **settings)``; every loop is closed after."""
    from loop_helpers import Loops

    made = Loops(workspace)
    yield made
    await made.close_all()
