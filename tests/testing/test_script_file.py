"""The JSON script format, the command line entry point, and the shipped demo script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import openai
import pytest

from catbuddy.testing.script import ScriptError, load_script, reply_from_json, script_from_json
from catbuddy.testing.scripted_llm import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "catbuddy" / "testing" / "demo_script.json"


def test_a_script_file_with_options_loads_every_reply_kind(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "replies": [
                    "plain text",
                    {"text": "slow", "delay": 0.01, "chunk_size": 2},
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}, "id": "c1"}]},
                    {"error": {"status": 429, "retry_after": 2}},
                ],
                "exhausted": "error",
                "context_window": 4096,
                "prompt_token_factor": 1.2,
            }
        )
    )
    script = load_script(path)
    texts = [r.text for r in script.replies]
    assert texts == ["plain text", "slow", "", ""]
    assert script.replies[1].chunk_size == 2 and script.replies[1].delay == 0.01
    assert script.replies[2].tool_calls[0].arguments_json == '{"path": "a"}'
    assert script.replies[3].error is not None and script.replies[3].error.retry_after == 2
    assert script.options == {"exhausted": "error", "context_window": 4096, "prompt_token_factor": 1.2}


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"replies": [{"txt": "hi"}]}, "reply #1: unknown key 'txt'; allowed keys: text"),
        ([{"tool_calls": [{"arguments": {}}]}], "reply #1.tool_calls[0]: `name` is required"),
        (["ok", {"delay": "slow", "text": "x"}], "reply #2.delay: expected an integer or a number, got str"),
        ([{"error": {"status": 200}}], "reply #1.error.status: expected an HTTP error status 400-599"),
        ([{}], "reply #1: a reply needs `text`, `tool_calls` or `error`"),
        ({"replies": [], "exhausted": "loop"}, "`exhausted` must be one of echo, error"),
        ({"reply": []}, "unknown key 'reply'"),
        ("hello", "expected a list of replies"),
        ([{"text": "x", "chunk_size": 0}], "reply #1.chunk_size: expected an integer ≥ 1"),
    ],
)
def test_malformed_scripts_name_the_problem(data: object, problem: str) -> None:
    with pytest.raises(ScriptError) as error:
        script_from_json(data, "demo.json")
    assert problem in str(error.value)


def test_invalid_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  "ok",\n  {"text": }\n]')
    with pytest.raises(ScriptError, match=r"broken\.json: not valid JSON \(line 3"):
        load_script(path)


def test_a_missing_script_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="cannot read the script file"):
        load_script(tmp_path / "nope.json")


def test_python_lists_may_mix_json_forms() -> None:
    with pytest.raises(ScriptError, match="reply #2: unknown key 'bogus'"):
        ScriptedLLM(["fine", {"bogus": 1}])
    assert reply_from_json({"text": "x", "finish_reason": "length"}).resolved_finish_reason == "length"


def test_the_demo_script_plays_greeting_tools_explanations_then_echo() -> None:
    script = load_script(DEMO)
    assert all(r.delay > 0 for r in script.replies)  # the demo streams visibly; the test need not wait
    assert script.options["summaries"] == "short"
    quick = [replace(r, delay=0.0) for r in script.replies]
    with ScriptedLLM(quick, strict=script.options.get("exhausted") == "error") as llm:
        sdk = openai.OpenAI(base_url=llm.base_url, api_key="anything", max_retries=0)
        user = [{"role": "user", "content": "hi"}]
        replies = [
            sdk.chat.completions.create(model="scripted", messages=user).choices[0].message
            for _ in range(len(quick) + 1)
        ]
    assert "/context" in replies[0].content and "compact" in replies[0].content  # says what to try
    assert [c.function.name for c in replies[1].tool_calls] == ["list_dir", "read_file"]
    assert "```python" in replies[2].content
    assert replies[-1].content == "Echo: hi"


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "catbuddy.testing.scripted_llm", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )


def test_the_command_line_serves_a_script_until_terminated(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(["Hello from the command line"]))
    process = _cli(str(path), "--strict")
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        base_url = first.split(" at ")[-1].strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        hint = process.stdout.readline() + process.stdout.readline()
        assert f"OPENAI_BASE_URL={base_url} OPENAI_API_KEY=anything CATBUDDY_MODEL=scripted catbuddy" in hint
        sdk = openai.OpenAI(base_url=base_url, api_key="anything", max_retries=0)
        reply = sdk.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "Hello from the command line"
    finally:
        process.terminate()
        process.wait(timeout=5)


def test_the_command_line_rejects_a_malformed_script(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"text": "hi", "colour": "red"}]')
    process = _cli(str(path))
    _, err = process.communicate(timeout=10)
    assert process.returncode == 2
    assert f"error: {path}: reply #1: unknown key 'colour'" in err
