"""Recorded real provider traffic, replayed byte for byte to `catbuddy run` (in process, the real openai SDK
over HTTP). Test data: tests/data/provider_recordings/*.json — each file names the public repository,
path and commit it was recorded from (its ``source``); see that directory's README.md."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest

from catbuddy.cli_commands.headless import run_headless
from catbuddy.config import Settings
from catbuddy.llm.provider import Provider
from catbuddy.llm.reasoning import reasoning_text
from catbuddy.session.records import read_session_file
from catbuddy.testing.replay import RECORDINGS_DIR, Recording, ReplayServer, all_recordings
from catbuddy.workspace import Workspace

pytestmark = pytest.mark.skipif(not RECORDINGS_DIR.is_dir(), reason="the shared recordings are not here")

RECORDINGS = [r for r in all_recordings()] if RECORDINGS_DIR.is_dir() else []
CHAT = [r for r in RECORDINGS if r.api != "anthropic"]
REASONING_MARKS = ('"reasoning_content":"', '"reasoning_content": "', '"reasoning":"', '"reasoning": "',
                   '"reasoning_details":[{', '"reasoning_details": [{', "<think>", '"type":"thinking"')  # fmt: skip


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Provider, "backoff_base", 0.01)
    monkeypatch.setattr(Provider, "retry_after_cap", 0.05)


def replay(
    recording: Recording, workspace: Workspace, **settings: Any
) -> tuple[int, dict[str, Any], ReplayServer]:
    server = ReplayServer(recording).start()
    try:
        config = Settings(
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
    finally:
        server.close()


def stored_replies(workspace: Workspace, session_id: str) -> list[dict[str, Any]]:
    path = next(workspace.sessions_dir.rglob(f"*{session_id}*.jsonl"))
    return [r.message for r in read_session_file(path).messages if r.message.get("role") == "assistant"]


def carries_reasoning(recording: Recording) -> bool:
    first = recording.responses[0].body
    return any(mark in first for mark in REASONING_MARKS) and recording.kind != "error"


@pytest.mark.parametrize("recording", CHAT, ids=[r.id for r in CHAT])
def test_every_recorded_exchange_ends_as_the_provider_meant(
    recording: Recording, workspace: Workspace
) -> None:
    code, result, server = replay(recording, workspace)
    if recording.kind == "error":
        assert code == 1 and result["errors"], result
        assert "Traceback" not in result["errors"][0]
        return
    assert code == 0, result["errors"]
    assert result["result"].strip()
    assert "<think>" not in result["result"] and "</think>" not in result["result"]
    if recording.kind.endswith("tool"):
        assert len(server.requests) >= 2, "the tool call was answered and the model asked again"


@pytest.mark.parametrize("recording", [r for r in CHAT if carries_reasoning(r)], ids=lambda r: r.id)
def test_reasoning_is_stored_apart_from_the_answer(recording: Recording, workspace: Workspace) -> None:
    code, result, _ = replay(recording, workspace)
    replies = stored_replies(workspace, result["session_id"])
    reasoned = [m for m in replies if reasoning_text(m) or m.get("reasoning_details")]
    assert reasoned, "the reasoning was kept in the session"
    for message in reasoned:
        assert "<think>" not in (message.get("content") or "")
    if any(reasoning_text(m) for m in reasoned):  # (encrypted-only reasoning has no text to show)
        assert result["reasoning"], "--json carries the reasoning apart from the result"


FOLLOWED = [
    r
    for r in CHAT
    if r.followup_requests
    and isinstance(r.followup_requests[0], dict)
    and any(
        k in m
        for m in r.followup_requests[0].get("messages") or []
        if m.get("role") == "assistant"
        for k in ("reasoning_content", "reasoning_details")
    )
]


def _assistant(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next(m for m in messages if m.get("role") == "assistant")


def _opaque(details: list[dict[str, Any]]) -> list[str]:
    """The parts of reasoning items a provider checks: encrypted blobs and signatures."""
    return [str(d.get(k)) for d in details for k in ("data", "signature") if d.get(k)]


@pytest.mark.parametrize("recording", FOLLOWED, ids=lambda r: r.id)
def test_the_request_after_a_tool_call_carries_reasoning_as_the_family_requires(
    recording: Recording, workspace: Workspace
) -> None:
    """What the recorded client sent back (and the provider accepted) is what catbuddy sends back."""
    _, _, server = replay(recording, workspace)
    theirs = _assistant(recording.followup_requests[0]["messages"])  # type: ignore[index]
    ours = _assistant(server.requests[1]["messages"])
    if "reasoning_content" in theirs:
        assert ours.get("reasoning_content", "").strip() == theirs["reasoning_content"].strip()
    if "reasoning_details" in theirs:
        assert ours.get("reasoning_details"), "the items go back"
        for blob in _opaque(theirs["reasoning_details"]):
            assert blob in _opaque(ours["reasoning_details"]), (
                "signatures and encrypted data go back verbatim"
            )


def test_openrouter_names_the_upstream_provider_and_its_own_words(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "openrouter-429-upstream-rate-limit.json")
    code, result, _ = replay(recording, workspace)
    assert code == 1
    error = result["errors"][0]
    assert "Google" in error and "temporarily rate-limited upstream" in error


def test_magistral_content_parts_are_one_request_not_five(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "mistral-magistral-content-list.json")
    code, result, server = replay(recording, workspace)
    assert code == 0 and result["result"] == "2 + 2 = 4"
    assert len(server.requests) == 1
    assert "2+2=4" in result["reasoning"]


def test_think_tags_become_reasoning(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "hf-router-deepseek-r1-think-tags.json")
    code, result, _ = replay(recording, workspace)
    assert code == 0
    assert result["result"].startswith("Crossing the street")
    assert result["reasoning"].lstrip().startswith("Okay")


def test_reasoning_tokens_are_counted_in_the_usage(workspace: Workspace) -> None:
    recording = Recording.load(RECORDINGS_DIR / "groq-gpt-oss-120b-reasoning-tool.json")
    code, result, _ = replay(recording, workspace)
    assert code == 0
    assert (
        result["usage"]["reasoning_tokens"] >= 23
    )  # completion_tokens_details.reasoning_tokens of the first reply


def test_deepseek_thinking_mode_gets_its_reasoning_back_after_the_tool_call(workspace: Workspace) -> None:
    """DeepSeek refuses the second request of a thinking-mode tool loop without reasoning_content
    ("The reasoning_content in the thinking mode must be passed back to the API")."""
    recording = Recording.load(RECORDINGS_DIR / "deepseek-reasoner-reasoning-tool.json")
    _, _, server = replay(recording, workspace)
    reply = _assistant(server.requests[1]["messages"])
    assert reply["reasoning_content"].strip()
    assert reply["tool_calls"]
