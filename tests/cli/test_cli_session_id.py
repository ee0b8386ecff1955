"""Every headless run says which session it wrote: the first `--stream-json` event, `--json`'s
`session_id`, and a line on stderr in text mode. A reader that goes away early gets no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home


def stored_ids(project) -> list[str]:
    return [info.id for info in SessionStore(Workspace.at(project, default_home()).sessions_dir).list()]


def events_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_stream_json_starts_with_the_new_sessions_id(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("hello"))

    done = cli("run", "--stream-json", "hi")

    assert done.returncode == 0, done.stderr
    first = events_of(done.stdout)[0]
    assert first["kind"] == "session" and first["resumed"] is False
    assert stored_ids(project) == [first["session_id"]]
    assert first["path"].endswith(f"{first['session_id']}.jsonl")


def test_stream_json_of_a_resumed_run_starts_with_that_session(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("one"), Reply.text("two"))
    assert cli("run", "hi").returncode == 0
    (session_id,) = stored_ids(project)

    done = cli("run", "--stream-json", "--resume", session_id, "again")

    first = events_of(done.stdout)[0]
    assert first == {**first, "kind": "session", "session_id": session_id, "resumed": True}


def test_stream_json_with_continue_and_no_session_still_starts_with_the_new_one(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("hello"))

    done = cli("run", "--stream-json", "--continue", "hi")

    events = events_of(done.stdout)
    assert events[0]["kind"] == "session" and events[0]["session_id"] == stored_ids(project)[0]
    assert any(e["kind"] == "notice" and "started a new one" in e["text"] for e in events[1:])


def test_stream_json_of_a_failed_run_still_starts_with_the_session(cli, scripted_llm, project):
    scripted_llm.push(Reply.error(400, "bad request"))

    done = cli("run", "--stream-json", "hi")

    assert done.returncode == 1
    events = events_of(done.stdout)
    assert events[0]["kind"] == "session" and events[0]["session_id"] == stored_ids(project)[0]
    assert [e["reason"] for e in events if e["kind"] == "turn_end"] == ["error"]


def test_json_result_carries_the_session_id(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("hello"))

    done = cli("run", "--json", "hi")

    assert json.loads(done.stdout)["session_id"] == stored_ids(project)[0]


def test_text_mode_names_the_session_on_stderr_only(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("hello"))

    done = cli("run", "hi")

    (session_id,) = stored_ids(project)
    assert f"session {session_id}" in done.stderr and f"catbuddy run --resume {session_id}" in done.stderr
    assert session_id not in done.stdout and done.stdout.strip() == "hello"


def test_a_reader_that_stops_early_gets_no_traceback(project, llm_env, scripted_llm):
    scripted_llm.push(Reply.text("word " * 400, chunk_size=5))
    command = [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run", "--stream-json", "hi"]

    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=llm_env
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # like `| head -1`
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=60)

    assert json.loads(first)["kind"] == "session"
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
    assert code == 0
    assert stored_ids(project)  # the session was still written
