"""`catbuddy run --json` / `--stream-json` and the small commands, in-process through typer's CliRunner."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from catbuddy.cli import app
from catbuddy.session.records import read_session_file
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply


@pytest.fixture
def invoke(project, llm_env):
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["--cwd", str(project), *args], input=input, env=llm_env)

    return run


def test_json_prints_one_result_object(invoke, scripted_llm, project):
    (project / "a.txt").write_text("alpha\n")
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.txt"}), Reply.text("It says alpha."))

    result = invoke("run", "--json", "read a.txt")

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["reason"] == "done"
    assert data["result"] == "It says alpha."
    assert data["tool_calls"] == 1 and data["tool_errors"] == 0 and data["iterations"] == 2
    assert data["usage"]["prompt_tokens"] > 0 and data["session_id"]


def test_stream_json_prints_one_parseable_event_per_line(invoke, scripted_llm, project):
    (project / "a.txt").write_text("alpha\n")
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.txt"}), Reply.text("Done reading."))

    result = invoke("run", "--stream-json", "read a.txt")

    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[:3] == ["session", "state", "turn_start"]
    assert events[0]["session_id"] and events[0]["resumed"] is False
    assert kinds.index("tool_call_start") < kinds.index("tool_call_finish") < kinds.index("text_delta")
    assert events[-2]["kind"] == "turn_end" and events[-2]["reason"] == "done"
    assert events[-2]["text"] == "Done reading."
    assert "".join(e["text"] for e in events if e["kind"] == "text_delta") == "Done reading."


def test_stream_json_reports_a_failure_with_exit_code_1(invoke, scripted_llm):
    scripted_llm.push(Reply.error(400, "bad request"))

    result = invoke("run", "--stream-json", "hi")

    assert result.exit_code == 1
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e for e in events if e["kind"] == "error"]
    assert [e["reason"] for e in events if e["kind"] == "turn_end"] == ["error"]


def test_sessions_json_lists_the_session_with_its_first_message(invoke, scripted_llm):
    scripted_llm.push(Reply.text("ok"))
    assert invoke("run", "remember this first message").exit_code == 0

    result = invoke("sessions", "--json")

    (info,) = json.loads(result.stdout)
    assert info["first_user_message"] == "remember this first message"
    assert info["message_count"] == 2 and info["model"] == "scripted"


def test_sessions_says_so_when_there_are_none(invoke):
    result = invoke("sessions")
    assert result.exit_code == 0 and "No sessions yet" in result.stdout


def test_init_creates_the_workspace_once(invoke, project):
    first = invoke("init")
    second = invoke("init")

    assert first.exit_code == 0 and "created" in first.stdout
    assert (project / ".catbuddy").is_dir()
    assert second.exit_code == 0 and "nothing changed" in second.stdout


def test_count_reads_a_request_from_stdin(invoke):
    request = {"messages": [{"role": "user", "content": "hello there"}]}

    result = invoke("count", "--json", input=json.dumps(request))

    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["total_tokens"] > 2 and data["exact"] is True


def test_count_rejects_input_that_is_not_a_request(invoke):
    result = invoke("count", input="not json")
    assert result.exit_code == 2 and "not valid JSON" in result.output


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["context", "--help"]])
def test_help_describes_the_commands(invoke, args):
    result = invoke(*args)
    text = " ".join(result.stdout.split())  # help text is wrapped to the terminal width
    assert result.exit_code == 0
    assert text.startswith("Usage: catbuddy")
    if args == ["--help"]:
        for command in ("run", "sessions", "context", "count", "init"):
            assert f" {command} " in text
    if args[0] == "run":
        assert "--stream-json" in text and "Exit 0 done, 1 failed, 2 bad usage" in text


def test_resume_continues_the_same_session_file(invoke, scripted_llm, project):
    from catbuddy.workspace import Workspace, default_home

    scripted_llm.push(Reply.text("first"), Reply.text("second"))
    assert invoke("run", "one").exit_code == 0
    (info,) = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()

    result = invoke("run", "--resume", info.id, "two")

    assert result.exit_code == 0 and result.stdout.strip() == "second"
    roles = [r.role for r in read_session_file(info.path).messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert len(scripted_llm.requests[1].messages) == 4


def test_help_lists_every_command_with_its_whole_first_sentence() -> None:
    # Issue 31: `catbuddy --help` cut every command description short with "...".
    import os
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "catbuddy.cli", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=60,
    )
    commands = done.stdout.split("Commands:", 1)[1]
    assert not [line for line in commands.splitlines() if line.rstrip().endswith("...")]
    assert "the app against a scripted model, in a temporary folder." in " ".join(commands.split())
