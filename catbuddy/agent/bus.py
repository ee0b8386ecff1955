"""The event bus: the loop's listeners and its state, one place every collaborator reports to.

The runner and the compaction manager get the bus, never the loop: they can tell the world what
happened (``emit``) and which state the loop is in (``set_state``), nothing more. Reporting is one call:
the bus hands every event to the loop's session recorder first, which keeps the event types marked
``record`` (docs/architecture.md §5, §6), then to the listeners (front ends, memory). A recorder that
cannot write (disk full) raises to the one who reported, as an append of a message would, once the
listeners have seen the event (so an error about the disk still reaches the user); a listener
that fails is logged and skipped.

The bus is the one place secrets are scrubbed from events: a recorded or ``scrubbed`` event (errors,
notices, retries, approvals, governance, …) is masked — the keys catbuddy holds, key-shaped strings,
bearer tokens, URL passwords — before any listener sees it, so the TUI, ``--stream-json`` and the
session file all get the same safe copy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import fields, replace
from enum import Enum
from typing import Any

from catbuddy.agent.events import Event, LoopState, StateChanged
from catbuddy.redact import redact

log = logging.getLogger(__name__)

Listener = Callable[[Event], None]


def scrub(event: Event, secrets: Iterable[str] = ()) -> Event:
    """A copy of ``event`` with secrets masked in its text, lists and dicts (enums and numbers kept)."""
    known = tuple(secrets)
    changes: dict[str, Any] = {}
    for item in fields(event):
        value = getattr(event, item.name)
        if isinstance(value, Enum) or not isinstance(value, str | dict | list):
            continue
        cleaned = redact(value, known)
        if cleaned != value:
            changes[item.name] = cleaned
    return replace(event, **changes) if changes else event


class EventBus:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._listeners: list[Listener] = []
        self._recorder: Listener | None = None
        self._state = LoopState.IDLE
        self._secrets = tuple(s for s in secrets if s)

    def set_recorder(self, recorder: Listener | None) -> None:
        self._recorder = recorder

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        if event.record or event.scrubbed:
            event = scrub(event, self._secrets)
        failure: Exception | None = None
        if self._recorder is not None:
            try:
                self._recorder(event)
            except Exception as exc:  # raised to the reporter, after the listeners have seen the event
                failure = exc
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken front end must not break the agent
                log.exception("event listener failed on %s", event.kind)
        if failure is not None:
            raise failure

    @property
    def state(self) -> LoopState:
        return self._state

    def set_state(self, state: LoopState) -> None:
        if state is not self._state:
            old, self._state = self._state, state
            self.emit(StateChanged(old, state))
