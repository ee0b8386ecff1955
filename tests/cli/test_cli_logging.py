"""Headless commands log their model calls' retries and failures to the log file in catbuddy's home,
as the app does; stderr keeps only the run's own lines."""

from __future__ import annotations

import socket

from catbuddy.logs import LOG_FILE
from catbuddy.testing.script import Reply


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def provider_lines(home) -> list[str]:
    path = home / "logs" / LOG_FILE
    return [line for line in path.read_text().splitlines() if "catbuddy.llm.provider" in line]


def test_a_run_against_a_closed_port_logs_the_retry_and_the_failure(cli, isolated_home):
    base_url = f"http://user:pa55word-secret@127.0.0.1:{closed_port()}/v1"

    done = cli("run", "hi", env={"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-cli-logtest-0123456789abcdef"})

    assert done.returncode == 1
    retry, failure = provider_lines(isolated_home)
    assert "(attempt 1 of 2): connection refused" in retry and "retrying in" in retry
    assert "failed after 2 attempts" in failure and "EndpointUnreachable" in failure
    text = (isolated_home / "logs" / LOG_FILE).read_text()
    assert "pa55word-secret" not in text and "sk-cli-logtest-0123456789abcdef" not in text
    assert "catbuddy.llm.provider" not in done.stderr  # the run prints its own "retrying" and "error" lines
    assert "retrying in" in done.stderr and "error: Cannot connect" in done.stderr


def test_a_run_with_server_errors_logs_every_attempt(cli, scripted_llm, isolated_home, project):
    (isolated_home / "config.toml").write_text("max_retries = 1\n")
    scripted_llm.push(Reply.error(502, "bad gateway"), Reply.text("recovered"))

    done = cli("run", "hi")

    assert done.returncode == 0 and done.stdout.strip() == "recovered"
    (retry,) = provider_lines(isolated_home)
    assert "(attempt 1 of 2): server error (502)" in retry


def test_a_compaction_that_fails_is_logged_too(cli, scripted_llm, isolated_home, project):
    from catbuddy.session.store import SessionStore
    from catbuddy.workspace import Workspace

    store = SessionStore(Workspace.at(project, isolated_home).sessions_dir)
    with store.create(project, "scripted") as session:
        for i in range(20):
            session.append_message({"role": "user", "content": f"question {i}"})
            session.append_message({"role": "assistant", "content": f"answer {i}"})
    (isolated_home / "config.toml").write_text("max_retries = 0\n")
    scripted_llm.push(Reply.error(400, "summarizer refused"))

    done = cli("compact")

    assert done.returncode == 1
    assert any("summarizer refused" in line and "failed after 1 attempt" in line for line in provider_lines(isolated_home))
