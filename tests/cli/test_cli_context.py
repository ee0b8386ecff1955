"""`catbuddy context --history FILE.jsonl`: crafted session files governed into a valid, fitting request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from catbuddy.cli import app
from catbuddy.context.governance.governor import protocol_problems

WINDOW = 6500  # room for the shipped workspace defaults, which the prompt reads in place


def write_session(path: Path, messages: list[dict[str, Any]], extra_lines: list[str] = ()) -> Path:
    lines = [
        json.dumps(
            {
                "type": "meta",
                "session_id": "20260101-000000-abcd",
                "created_at": "2026-01-01T00:00:00Z",
                "work_root": str(path.parent),
                "model": "gpt-4o",
                "catbuddy_version": "0",
            }
        )
    ]
    for n, message in enumerate(messages, 1):
        lines.append(json.dumps({"type": "message", "id": f"m{n}", "ts": None, **message}))
    lines.extend(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def call(call_id: str, name: str = "read_file", args: str = '{"path": "a.py"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def messy_history(turns: int, result_chars: int) -> list[dict[str, Any]]:
    """Turns of read_file calls with big results, an orphan result and a call that never got one."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"question {turn}"})
        messages.append({"role": "assistant", "content": None, "tool_calls": [call(f"c{turn}")]})
        messages.append(
            {"role": "tool", "tool_call_id": f"c{turn}", "content": f"line {turn}\n" * result_chars}
        )
        messages.append({"role": "assistant", "content": f"answer {turn}"})
    messages.insert(2, {"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
    messages.append({"role": "user", "content": "last question"})
    messages.append(
        {"role": "assistant", "content": None, "tool_calls": [call("lost"), call("lost2", "grep")]}
    )
    return messages


@pytest.fixture
def context(project):
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(app, ["context", "--cwd", str(project), "--no-mcp", "-m", "gpt-4o", *args])

    return run


def governed(result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_orphans_and_missing_results_are_repaired(context, tmp_path):
    path = write_session(tmp_path / "s.jsonl", messy_history(turns=3, result_chars=5))

    data = governed(context("--history", str(path), "--json"))

    assert {"messages", "report", "budget"} <= data.keys()
    assert protocol_problems(data["messages"]) == []
    assert data["messages"][0]["role"] == "system"
    report = data["report"]
    assert report["orphans_dropped"] == 1 and report["backfilled"] == 2
    assert data["messages"][-1]["tool_call_id"] == "lost2"


def test_a_history_bigger_than_the_window_is_cut_to_the_budget(context, tmp_path):
    path = write_session(tmp_path / "s.jsonl", messy_history(turns=30, result_chars=200))

    data = governed(context("--history", str(path), "--json", "--window", str(WINDOW), "--max-output", "500"))

    report, budget = data["report"], data["budget"]
    assert budget["context_window"] == WINDOW and budget["limit"] == report["budget"]
    assert report["tokens_before"] > WINDOW
    assert report["calibrated_after"] <= budget["limit"]
    assert report["microcompacted"] > 0 and report["messages_snipped"] > 0
    assert protocol_problems(data["messages"]) == []
    assert data["messages"][1]["role"] == "user"
    users = [m["content"] for m in data["messages"] if m["role"] == "user"]
    assert users[-1] == "last question"


def test_a_corrupt_line_is_reported_not_fatal(context, tmp_path):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = write_session(tmp_path / "s.jsonl", messages, extra_lines=["{not json", '{"type": "message"'])

    data = governed(context("--history", str(path), "--json"))

    assert data["load_problems"]
    assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant"]


def test_the_text_view_shows_the_governed_history_and_report(context, tmp_path):
    path = write_session(tmp_path / "s.jsonl", messy_history(turns=2, result_chars=3))

    result = context("--history", str(path))

    assert result.exit_code == 0
    assert "=== Governed history" in result.stdout and "=== Governance report ===" in result.stdout
    assert "1 orphan tool result dropped" in result.stdout


def test_a_file_that_is_not_jsonl_exits_2_with_a_clear_message(context, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("These are my notes.\nNot a session at all.\n")

    result = context("--history", str(path))

    assert result.exit_code == 2
    assert "notes.txt is not a session file" in result.output and "JSONL" in result.output
    assert "Traceback" not in result.output


def test_a_missing_history_file_exits_2(context, tmp_path):
    result = context("--history", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2 and "no such file" in result.output


def test_history_and_session_together_exit_2(context, tmp_path):
    path = write_session(tmp_path / "s.jsonl", [{"role": "user", "content": "hi"}])
    result = context("--history", str(path), "--session", "x")
    assert result.exit_code == 2 and "either --history or --session" in result.output


def test_session_option_reads_a_session_of_this_directory(context, project):
    from catbuddy.session.store import SessionStore
    from catbuddy.workspace import Workspace, default_home

    store = SessionStore(Workspace.at(project, default_home()).sessions_dir)
    with store.create(project, "gpt-4o") as session:
        session.append_message({"role": "user", "content": "from the store"})
        session_id = session.id

    data = governed(context("--session", session_id, "--json"))

    assert data["messages"][1] == {"role": "user", "content": "from the store"}
