"""An ACP client built from the `agent-client-protocol` package, driving `catbuddy acp` as a subprocess
against the scripted OpenAI-compatible server."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
)
from acp_helpers import ENTRY, EditorClient

from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.testing.scripted_llm import ScriptedLLM


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
