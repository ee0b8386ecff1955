"""Small Pilot helpers shared by the TUI tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


async def wait_for(pilot: Any, condition: Callable[[], Any], timeout: float = 5.0, what: str = "") -> Any:
    """Pause the pilot until `condition()` is truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {what or condition}")


def texts(app: Any, cls: type) -> list[str]:
    return [block.text for block in app.transcript.query(cls)]


async def type_text(pilot: Any, text: str) -> None:
    """Type into the focused prompt as a user would (spaces and all)."""
    keys = ["space" if ch == " " else ch for ch in text]
    await pilot.press(*keys)
