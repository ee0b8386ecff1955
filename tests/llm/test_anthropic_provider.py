"""The native Anthropic provider against recorded Anthropic Messages traffic, replayed byte for byte to
`catbuddy run` with the real anthropic SDK. Test data: tests/data/provider_recordings/anthropic-*.json
(each names the public repository, path and commit it comes from)."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest

from catbuddy.cli_commands.headless import run_headless
from catbuddy.config import Settings, load_settings
from catbuddy.llm.anthropic_wire import request_body
from catbuddy.llm.errors import AuthenticationError
from catbuddy.llm.lazy import openai_provider
from catbuddy.llm.provider import Provider
from catbuddy.testing.replay import RECORDINGS_DIR, Recording, ReplayServer, all_recordings
from catbuddy.workspace import Workspace

pytestmark = pytest.mark.skipif(not RECORDINGS_DIR.is_dir(), reason="the shared recordings are not here")
NATIVE = [r for r in all_recordings() if r.api == "anthropic"] if RECORDINGS_DIR.is_dir() else []


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Provider, "backoff_base", 0.01)
    monkeypatch.setattr(Provider, "retry_after_cap", 0.05)


def replay(
    recording: Recording, workspace: Workspace, **settings: Any
) -> tuple[int, dict[str, Any], ReplayServer]:
    with ReplayServer(recording) as server:
        config = Settings(
            provider="anthropic",
            base_url=server.base_url,
            api_key="test-key",
            model=recording.model,
            approval="yolo",
            max_retries=max(0, len(recording.responses) - 1) if recording.kind == "error" else 4,
            **settings,
        )
        out = io.StringIO()
        code = asyncio.run(
            run_headless(
                workspace,
                config,
                "What's the weather in Florence, Italy?",
                fmt="json",
                out=out,
                err=io.StringIO(),
            )
        )
    return code, json.loads(out.getvalue()), server


@pytest.mark.parametrize("recording", NATIVE, ids=[r.id for r in NATIVE])
def test_every_recorded_anthropic_exchange_runs(recording: Recording, workspace: Workspace) -> None:
    code, result, server = replay(recording, workspace)
    assert all(path.startswith("/v1/messages") for path in server.paths)
    if recording.kind == "error":
        assert code == 1 and result["errors"]
        return
    assert code == 0, result["errors"]
    assert result["result"].strip()
    if recording.kind.endswith("tool"):
        assert len(server.requests) >= 2


def test_a_thinking_tool_loop_sends_the_signed_thinking_block_back(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "anthropic-claude-sonnet-4-thinking-tool.json")
    _, result, server = replay(recording, workspace)
    theirs = next(m for m in recording.followup_requests[0]["messages"] if m["role"] == "assistant")  # type: ignore[index]
    ours = next(m for m in server.requests[1]["messages"] if m["role"] == "assistant")
    assert ours["content"][0]["type"] == "thinking"
    assert ours["content"][0]["signature"] == theirs["content"][0]["signature"]
    assert ours["content"][0]["thinking"] == theirs["content"][0]["thinking"]
    assert result["reasoning"].startswith("The user is asking for")


def test_cache_reads_and_writes_are_reported(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "anthropic-claude-opus-4-cache-tool-chain.json")
    _, result, server = replay(recording, workspace)
    # message_start of the first reply: input 4, cache_creation 19,302, cache_read 103,617.
    assert result["usage"]["cached_tokens"] >= 103_617 and result["usage"]["cache_write_tokens"] >= 19_302
    first = server.requests[0]
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_overloaded_is_retried_then_said_plainly(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "anthropic-529-overloaded.json")
    code, result, server = replay(recording, workspace)
    assert code == 1 and len(server.requests) == 5
    assert "overloaded (529)" in result["errors"][0]


def test_a_prompt_too_long_is_a_context_overflow(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "anthropic-400-prompt-too-long.json")
    code, result, _ = replay(recording, workspace)
    assert code == 1 and "context window" in result["errors"][0]


def test_rate_limits_honour_retry_after(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "anthropic-429-rate-limit.json")
    code, result, server = replay(recording, workspace)
    assert code == 1 and len(server.requests) == 5 and "Rate limited" in result["errors"][0]


def test_the_key_comes_from_anthropic_api_key_by_default(tmp_path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('provider = "anthropic"\nmodel = "claude-sonnet-4-5"\n')
    settings = load_settings(home, tmp_path, env={"ANTHROPIC_API_KEY": "sk-ant-test"})
    assert (settings.api_key_env, settings.api_key) == ("ANTHROPIC_API_KEY", "sk-ant-test")


def test_no_key_says_which_variable_to_set() -> None:
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        openai_provider(Settings(provider="anthropic", api_key_env="ANTHROPIC_API_KEY"))


def test_tool_results_and_the_next_words_share_one_user_message() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}},
            {"id": "t2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "A"},
        {"role": "tool", "tool_call_id": "t2", "content": ""},
    ]  # fmt: skip
    body = request_body(model="claude-sonnet-4-5", messages=messages, tools=None, max_tokens=4096)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    results = body["messages"][2]["content"]
    assert [b["tool_use_id"] for b in results] == ["t1", "t2"] and results[1]["content"] == "(no output)"
    assert body["messages"][1]["content"][0]["input"] == {"path": "a"}


def test_reasoning_effort_becomes_a_thinking_budget_below_max_tokens() -> None:
    body = request_body(model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], tools=None,
                        max_tokens=8192, effort="high")  # fmt: skip
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192 - 1024}
