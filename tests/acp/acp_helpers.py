"""The ACP client the tests drive `catbuddy acp` with, built from the `agent-client-protocol` package."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp.schema import AllowedOutcome, DeniedOutcome, ReadTextFileResponse, RequestPermissionResponse

ENTRY = [sys.executable, "-m", "catbuddy", "acp"]


class EditorClient:
    """What an editor does: records updates, answers permission requests, serves its open buffers."""

    def __init__(self, answer: str | None = "allow_once", buffers: dict[str, str] | None = None) -> None:
        self.answer = answer  # an option id, or None: the user dismissed the question
        self.buffers = buffers or {}  # path -> unsaved text, served by fs/read_text_file
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.writes: dict[str, str] = {}
        self.on_update: Callable[[Any], None] | None = None

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        if self.on_update is not None:
            self.on_update(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any):
        self.permissions.append((tool_call, [option.option_id for option in options]))
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ):
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
        self.writes[path] = content

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if getattr(u, "session_update", "") == kind]

    def message_text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk"))
