"""The event bus: the loop's listeners and its state, one place every collaborator reports to.

The runner and the compaction manager get the bus, never the loop: they can tell the world what
happened (``emit``) and which state the loop is in (``set_state``), nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from catbuddy.agent.events import Event, LoopState, StateChanged

log = logging.getLogger(__name__)

Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._state = LoopState.IDLE

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # a broken front end must not break the agent
                log.exception("event listener failed on %s", event.kind)

    @property
    def state(self) -> LoopState:
        return self._state

    def set_state(self, state: LoopState) -> None:
        if state is not self._state:
            old, self._state = self._state, state
            self.emit(StateChanged(old, state))
