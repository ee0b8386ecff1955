"""Agent-loop fixtures: a project on disk, a strict scripted server, and loops that are always closed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from agent_helpers import Recorder

from catbuddy.agent.loop import AgentLoop
from catbuddy.llm.provider import Provider
from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.workspace import BOOTSTRAP_FILES, Workspace


@pytest.fixture
def workspace(workspace: Workspace) -> Workspace:
    """A project whose workspace files exist and are empty: no bootstrap layer, as the budget figures
    of these tests assume (the shipped defaults would otherwise be read in place of missing files)."""
    workspace.project_dir.mkdir(exist_ok=True)
    for name in BOOTSTRAP_FILES:
        (workspace.project_dir / name).write_text("")
    return workspace


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry waits of a few milliseconds, so retry tests take no time."""
    monkeypatch.setattr(Provider, "backoff_base", 0.01)
    monkeypatch.setattr(Provider, "retry_after_cap", 0.05)


@pytest.fixture
async def make_loop(workspace: Workspace) -> AsyncIterator[Callable[..., Any]]:
    """``await make_loop(llm, approval="yolo", interactive=False, **settings)`` → (loop, recorder)."""
    loops: list[AgentLoop] = []

    async def factory(
        llm: ScriptedLLM,
        *,
        approval: str = "yolo",
        interactive: bool = True,
        channel: str = "tui",
        resume: str | None = None,
        **overrides: Any,
    ) -> tuple[AgentLoop, Recorder]:
        settings = llm.settings(approval=approval, **overrides)
        loop = AgentLoop(workspace, settings, channel=channel, interactive=interactive, resume=resume)
        recorder = Recorder()
        loop.add_listener(recorder)
        loops.append(loop)
        await loop.start()
        return loop, recorder

    yield factory
    for loop in loops:
        await loop.aclose()
