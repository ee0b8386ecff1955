"""Small Pilot helpers shared by the TUI tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

WAIT_TIMEOUT = 30.0  # a ceiling, not a delay: on a loaded machine a real turn can take seconds


async def wait_for(
    pilot: Any, condition: Callable[[], Any], timeout: float = WAIT_TIMEOUT, what: str = ""
) -> Any:
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


def make_long_session(workspace: Any, messages: int, model: str = "scripted") -> str:
    """A stored session of `messages` messages (user/assistant pairs with a tool call now and then)."""
    from catbuddy.session.store import SessionStore

    store = SessionStore(workspace.sessions_dir)
    session = store.create(workspace.work_root, model)
    index = 0
    while index < messages:
        turn = index // 4
        session.append_message({"role": "user", "content": f"question {turn}\n\n[runtime: time=x]"})
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
        }
        session.append_message({"role": "assistant", "content": None, "tool_calls": [call]})
        result = {"role": "tool", "tool_call_id": f"call_{turn}", "content": "print(1)\n" * 5}
        session.append_message(result, {"status": "ok", "summary": "5 lines"})
        session.append_message(
            {"role": "assistant", "content": f"Answer **{turn}**\n\n```python\nx = {turn}\n```\n"}
        )
        index += 4
    session.close()
    return session.id


def burst(app: Any, text: str, *keys: str) -> None:
    """Post the keys of `text` (then `keys`, e.g. "enter") to the app all at once, as a paste or a
    fast typist does: no key waits for the one before it to be handled."""
    from textual import events

    for char in text:
        app.post_message(events.Key("space" if char == " " else char, char))
    for key in keys:
        app.post_message(events.Key(key, "\r" if key == "enter" else None))
