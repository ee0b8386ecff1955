"""`catbuddy run --stream-json --approvals-from-stdin`: another program answers approval requests.

Each ``approval_request`` event on stdout is answered by one JSON line on stdin, e.g.
``{"call_id": "call_1", "choice": "allow_once"}`` (choices: allow_once, allow_session, deny,
deny_with_note; optional ``note`` and ``pattern``). A line that cannot be used is reported as a
``notice`` event and ignored; when stdin closes, every open and later request is denied, so the run
never hangs.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import IO, Any

from catbuddy.agent.events import ApprovalChoice, ApprovalRequested, Event, Notice

CHOICES = ", ".join(choice.value for choice in ApprovalChoice)


class StdinApprovals:
    def __init__(
        self, answer: Callable[[str, str, str, str], bool], emit: Callable[[Event], None], stdin: IO[str]
    ) -> None:
        self._answer = answer
        self._emit = emit
        self._stdin = stdin
        self._open: set[str] = set()
        self.closed = False

    def __call__(self, event: Event) -> None:
        """A loop listener: remember open requests; deny them at once once stdin has closed."""
        if isinstance(event, ApprovalRequested) and event.answerable:
            self._open.add(event.call_id)
            if self.closed:
                self._deny(event.call_id, "standard input is closed")

    async def read(self) -> None:
        """Apply answer lines until stdin closes. The blocking reads happen in a daemon thread, so a
        caller that keeps stdin open after the run cannot keep catbuddy from exiting."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str] = asyncio.Queue()

        def pump() -> None:
            try:
                for line in iter(self._stdin.readline, ""):
                    loop.call_soon_threadsafe(lines.put_nowait, line)
                loop.call_soon_threadsafe(lines.put_nowait, "")
            except (RuntimeError, OSError, ValueError):  # the run is over (loop closed) or stdin broke
                return

        threading.Thread(target=pump, name="stdin-approvals", daemon=True).start()
        while line := await lines.get():
            if line.strip():
                self.take(line)
        self.closed = True
        for call_id in sorted(self._open):
            self._deny(call_id, "standard input is closed")

    def take(self, line: str) -> None:
        """Apply one answer line, or report why it cannot be used."""
        try:
            data: Any = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            return self._problem(f"not JSON ({exc})")
        if not isinstance(data, dict) or not isinstance(data.get("call_id"), str):
            return self._problem('expected an object with "call_id" and "choice"')
        choice = data.get("choice")
        if choice not in {c.value for c in ApprovalChoice}:
            return self._problem(f'"choice" must be one of {CHOICES}, got {choice!r}')
        note, pattern = data.get("note", ""), data.get("pattern", "")
        if not isinstance(note, str) or not isinstance(pattern, str):
            return self._problem('"note" and "pattern" must be strings')
        if not self._answer(data["call_id"], choice, note, pattern):
            return self._problem(f"no approval request is waiting for call {data['call_id']!r}")
        self._open.discard(data["call_id"])
        return None

    def _deny(self, call_id: str, why: str) -> None:
        if self._answer(call_id, ApprovalChoice.DENY.value, f"denied: {why}", ""):
            self._open.discard(call_id)

    def _problem(self, why: str) -> None:
        self._emit(Notice(f"approval answer on standard input ignored: {why}", "warning"))
