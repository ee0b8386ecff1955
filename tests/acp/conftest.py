"""An ACP client built from the `agent-client-protocol` package, driving `catbuddy acp` as a subprocess
against the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.testing.scripted_llm import ScriptedLLM

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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def acp_env(scripted_llm: ScriptedLLM) -> dict[str, str]:  # noqa: F811
    env = dict(os.environ)
    env.update({"OPENAI_BASE_URL": scripted_llm.base_url, "OPENAI_API_KEY": "test-key",
                "CATBUDDY_MODEL": "scripted", "CATBUDDY_APPROVAL": "ask", "CATBUDDY_SANDBOX": "off"})  # fmt: skip
    return env


@pytest.fixture
def editor(project: Path, acp_env: dict[str, str]):
    """``async with editor(client) as (conn, session_id, process)``: initialized, one new session."""

    @asynccontextmanager
    async def start(client: EditorClient, *, fs: bool = True, load: str | None = None) -> AsyncIterator[Any]:
        async with spawn_agent_process(lambda agent: client, *ENTRY, env=acp_env, cwd=project) as (
            conn,
            process,
        ):
            caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
            await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
            if load is None:
                session = await conn.new_session(cwd=str(project), mcp_servers=[])
                session_id = session.session_id
            else:
                await conn.load_session(cwd=str(project), session_id=load, mcp_servers=[])
                session_id = load
            yield conn, session_id, process

    return start
