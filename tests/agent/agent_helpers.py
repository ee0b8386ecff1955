"""Helpers for the agent-loop tests: an event recorder, session-file readers and protocol checks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from catbuddy.agent.events import Event, TurnEnded
from catbuddy.agent.loop import AgentLoop
from catbuddy.context.governance.governor import protocol_problems
from catbuddy.session.records import read_session_file


class Recorder:
    """A listener that keeps every event and lets a test wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []
        self.on: Callable[[Event], None] | None = None

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        for match, future in list(self._waiters):
            if not future.done() and match(event):
                future.set_result(event)
        if self.on is not None:
            self.on(event)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]

    async def wait_for(
        self, kind: type[Event], match: Callable[[Any], bool] = lambda e: True, timeout: float = 10.0
    ) -> Any:
        for event in self.events:
            if isinstance(event, kind) and match(event):
                return event
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters.append((lambda e: isinstance(e, kind) and match(e), future))
        return await asyncio.wait_for(future, timeout)

    async def turn_end(self, count: int = 1, timeout: float = 15.0) -> list[TurnEnded]:
        deadline = time.monotonic() + timeout
        while len(self.of(TurnEnded)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"only {len(self.of(TurnEnded))} of {count} turns ended: {self.kinds()}")
            await asyncio.sleep(0.01)
        return self.of(TurnEnded)


def session_messages(loop: AgentLoop) -> list[dict[str, Any]]:
    """The messages on disk, as OpenAI dicts, in file order."""
    return [record.message for record in read_session_file(loop.session.path).messages]


def session_events(loop: AgentLoop, kind: str | None = None) -> list[Any]:
    from catbuddy.session.records import EventRecord

    records = read_session_file(loop.session.path).records
    return [r for r in records if isinstance(r, EventRecord) and (kind is None or r.kind == kind)]


def assert_valid_request(messages: list[dict[str, Any]]) -> None:
    """What an OpenAI-style API demands: system first, every call answered right after it, no orphans."""
    assert messages and messages[0]["role"] == "system", messages[:1]
    problems = protocol_problems(messages)
    assert not problems, problems


async def wait_for_file(path: Any, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return str(path.read_text().strip())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} did not appear within {timeout} s")
