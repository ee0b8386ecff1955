"""`catbuddy compact [--session ID] [INSTRUCTIONS]` and the calibration `catbuddy context` shows."""

from __future__ import annotations

import json

import pytest
from compaction_helpers import Brain, summary_requests, summary_text
from typer.testing import CliRunner

from catbuddy.cli import app
from catbuddy.session.records import CompactionRecord, read_session_file
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply


@pytest.fixture
def cli(workspace):
    runner = CliRunner()

    def invoke(llm, *args: str):
        common = ["--cwd", str(workspace.work_root), "--model", "scripted"]
        if args[0] != "context":
            common += ["--base-url", llm.base_url]
        return runner.invoke(app, [args[0], *common, *args[1:]], env={"OPENAI_API_KEY": "test-key"})

    return invoke


def seeded_session(workspace, turns: int = 20) -> str:
    store = SessionStore(workspace.sessions_dir)
    with store.create(workspace.work_root, "scripted") as session:
        for i in range(turns):
            session.append_message({"role": "user", "content": f"question {i}"})
            session.append_message({"role": "assistant", "content": f"answer {i}"})
        return session.id


def compactions(workspace, session_id: str) -> list[CompactionRecord]:
    path = SessionStore(workspace.sessions_dir).path_for(session_id)
    return [r for r in read_session_file(path).records if isinstance(r, CompactionRecord)]


def test_compact_folds_the_latest_session_with_the_instructions(scripted_llm_factory, cli, workspace):
    older = seeded_session(workspace)
    latest = seeded_session(workspace)
    llm = scripted_llm_factory([Brain()])

    result = cli(llm, "compact", "keep", "the", "API", "design", "decisions")

    assert result.exit_code == 0, result.output
    assert f"session {latest}: Compacted 14 messages" in result.output
    assert "keep the API design decisions" in summary_requests(llm)[0].messages[-1]["content"]
    [record] = compactions(workspace, latest)
    assert record.extra["prose"] == summary_text(1) and record.folded_through
    assert record.summary.startswith(summary_text(1) + "\n")
    assert not compactions(workspace, older)


def test_compact_with_session_folds_that_session(scripted_llm_factory, cli, workspace):
    older = seeded_session(workspace)
    latest = seeded_session(workspace)
    llm = scripted_llm_factory([Brain()])

    result = cli(llm, "compact", "--session", older)

    assert result.exit_code == 0, result.output
    assert f"session {older}:" in result.output
    assert len(compactions(workspace, older)) == 1 and not compactions(workspace, latest)


def test_compact_exits_1_when_the_summary_fails(scripted_llm_factory, cli, workspace):
    session_id = seeded_session(workspace)
    llm = scripted_llm_factory([Reply.error(500, "summarizer down")] * 10)  # also for the retries

    result = cli(llm, "compact")

    assert result.exit_code == 1
    assert "Compaction failed" in result.output and "summarizer down" in result.output
    assert not compactions(workspace, session_id)


def test_compact_without_a_session_has_nothing_to_do_and_exits_0(scripted_llm_factory, cli):
    result = cli(scripted_llm_factory([]), "compact")
    assert result.exit_code == 0 and "No session to compact" in result.output


def test_context_shows_the_calibration_a_session_observed(scripted_llm_factory, cli, workspace):
    llm = scripted_llm_factory([Reply.text("hello " * 50, chunk_size=10_000)], prompt_token_factor=1.5)
    assert cli(llm, "run", "say hello").exit_code == 0
    [info] = SessionStore(workspace.sessions_dir).list()

    result = cli(llm, "context", "--json", "--no-mcp", "--session", info.id)

    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["calibration"] == pytest.approx(1.5, rel=0.02)
    report = data["report"]
    assert report["calibrated_after"] == pytest.approx(1.5 * report["tokens_after"], rel=0.02)
