"""Typing over an overlay: a read-only view or a picker (/context, /memory log, /resume, /model…)
closes at the first printable key, and that key and every one after it reach the input.

The keys are routed where the app receives them, in the order they came, so a burst typed while
the overlay is still closing is neither lost nor reordered (the overlay's own widgets never see it).
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App
from textual.widget import Widget

TYPE_THROUGH = "type_through"  # class attribute a screen sets to True to close when typed over
TYPED_TO_INPUT = "typed_to_input"  # class attribute of a focusable block whose typing goes to the input
CLOSING = "_typed_through"  # set on the screen instance once a key has closed it


def route(app: App[Any], event: events.Key | events.Paste, target: Widget) -> bool:
    """Send ``event`` to ``target`` (the input) if the active screen is typed over; True if it did."""
    screen = app.screen
    if not getattr(screen, TYPE_THROUGH, False):
        return False
    if not getattr(screen, CLOSING, False):
        if isinstance(event, events.Key) and not event.is_printable:
            return False  # arrows, Enter, Esc… still drive the overlay
        setattr(screen, CLOSING, True)
        screen.dismiss(None)
    target._forward_event(event)
    return True


def from_block(app: App[Any], event: events.Key | events.Paste, target: Widget) -> bool:
    """Typing while a transcript block has focus (a tool call selected with a click or Tab): the
    text goes to the input, which takes the focus back; Enter, arrows and Esc still act on the block."""
    focused = app.focused
    if focused is None or focused is target or not getattr(focused, TYPED_TO_INPUT, False):
        return False
    if isinstance(event, events.Key) and not event.is_printable:
        return False
    target.focus()
    target._forward_event(event)
    return True
