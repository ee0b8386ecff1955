"""`catbuddy run` shows reasoning apart from the answer: --json's `reasoning`, --stream-json's events,
stderr in text mode; and `CATBUDDY_PROVIDER=anthropic` runs the native provider from the command line."""

from __future__ import annotations

import json

import pytest

from catbuddy.testing.replay import RECORDINGS_DIR, Recording, ReplayServer
from catbuddy.testing.script import Reply


def test_json_carries_reasoning_apart_from_the_result(cli, scripted_llm) -> None:
    scripted_llm.push(Reply.text("4", reasoning="2+2 is 4."))
    done = cli("run", "--json", "2+2?")
    data = json.loads(done.stdout)
    assert (data["result"], data["reasoning"]) == ("4", "2+2 is 4.")


def test_stream_json_emits_reasoning_events_before_the_text(cli, scripted_llm) -> None:
    scripted_llm.push(Reply.text("4", reasoning="Simple arithmetic.", reasoning_field="reasoning"))
    done = cli("run", "--stream-json", "2+2?")
    kinds = [json.loads(line)["kind"] for line in done.stdout.splitlines()]
    assert "reasoning_delta" in kinds and kinds.index("reasoning_delta") < kinds.index("text_delta")


def test_text_mode_keeps_stdout_for_the_answer(cli, scripted_llm) -> None:
    scripted_llm.push(Reply.text("Paris.", reasoning="France's capital.", reasoning_field="think"))
    done = cli("run", "capital of France?")
    assert done.stdout.strip() == "Paris."
    assert "France's capital." in done.stderr


@pytest.mark.skipif(not RECORDINGS_DIR.is_dir(), reason="the shared recordings are not here")
def test_the_native_provider_from_the_environment(cli) -> None:
    # anthropic-claude-sonnet-4-tool.json (charmbracelet/fantasy's recorded Anthropic tool stream).
    recording = Recording.load(RECORDINGS_DIR / "anthropic-claude-sonnet-4-tool.json")
    with ReplayServer(recording) as server:
        env = {"CATBUDDY_PROVIDER": "anthropic", "OPENAI_BASE_URL": server.base_url + "/v1",
               "CATBUDDY_MODEL": recording.model, "ANTHROPIC_API_KEY": "sk-ant-test"}  # fmt: skip
        done = cli("run", "--json", "What's the weather in Florence, Italy?", env=env)
    assert done.returncode == 0, done.stderr
    assert "40" in json.loads(done.stdout)["result"]
    assert all(path.startswith("/v1/messages") for path in server.paths)
