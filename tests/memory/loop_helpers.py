"""Agent loops for the memory tests: always closed, with a recorder of their events."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from catbuddy.agent.events import Event
from catbuddy.agent.loop import AgentLoop
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.workspace import Workspace


class Events:
    def __init__(self) -> None:
        self.items: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.items.append(event)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.items if isinstance(e, kind)]

    async def wait_for(
        self, kind: type[Event], match: Callable[[Any], bool] = lambda e: True, timeout: float = 10
    ):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [e for e in self.of(kind) if match(e)]
            if found:
                return found[0]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {kind.__name__} within {timeout} s: {[e.kind for e in self.items]}")


class Loops:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.open: list[AgentLoop] = []

    async def __call__(
        self, llm: ScriptedLLM, *, background: bool = False, resume: str | None = None, **overrides: Any
    ):
        settings = llm.settings(approval=overrides.pop("approval", "yolo"), **overrides)
        loop = AgentLoop(self.workspace, settings, channel="tui", resume=resume, background_dream=background)
        events = Events()
        loop.add_listener(events)
        self.open.append(loop)
        await loop.start()
        return loop, events

    async def close_all(self) -> None:
        for loop in self.open:
            await loop.aclose()
