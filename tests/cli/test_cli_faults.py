"""`catbuddy` as a subprocess against faults: a broken provider, damaged sessions, bytes that are not
UTF-8, bad ids and bad config. Each ends in a clear message and the right exit code, never a traceback,
and whatever is stored can be continued."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from catbuddy.context.governance.governor import protocol_problems
from catbuddy.session.records import read_session_file
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.workspace import Workspace, default_home

CLI_TIMEOUT = 60.0


def store_of(project: Path) -> SessionStore:
    return SessionStore(Workspace.at(project, default_home()).sessions_dir)


def run_bytes(
    project: Path, env: dict[str, str], *args: str | bytes, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """Like the `cli` fixture, but arguments and standard input may be raw bytes."""
    return subprocess.run(
        [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=CLI_TIMEOUT,
    )


def no_traceback(done: subprocess.CompletedProcess[Any]) -> None:
    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err


def only_session(project: Path) -> list[dict[str, Any]]:
    (info,) = store_of(project).list()
    return [m.message for m in read_session_file(info.path).messages]


def configure(project: Path, text: str) -> None:
    (project / ".catbuddy").mkdir(exist_ok=True)
    (project / ".catbuddy" / "config.toml").write_text(text)


# --- provider faults ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply.empty(), "empty reply"),
        (Reply.no_choices(), "without any choices"),
        (Reply.no_events(), "empty stream (no events)"),
    ],
    ids=["empty", "no-choices", "no-events"],
)
def test_an_answer_with_nothing_in_it_fails_the_run_and_stores_no_empty_message(
    reply: Any, words: str, cli, scripted_llm: ScriptedLLM, project: Path
) -> None:
    scripted_llm.push(reply)
    done = cli("run", "hi", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["ok"] is False and any(words in e for e in result["errors"])
    no_traceback(done)
    assert [m["role"] for m in only_session(project)] == ["user"]  # no assistant message at all
    scripted_llm.push(Reply.text("here now"))
    again = cli("run", "--continue", "again")
    assert again.returncode == 0 and again.stdout.strip() == "here now"
    assert protocol_problems(scripted_llm.requests[-1].messages) == []


def test_a_malformed_chunk_mid_stream_keeps_the_text_shown_and_exits_1(cli, scripted_llm, project) -> None:
    scripted_llm.push(Reply.malformed(4, text="the first part of an answer", chunk_size=5))
    done = cli("run", "hi")
    assert done.returncode == 1
    assert done.stdout.startswith("the first part")
    assert "malformed chunk while the reply was streaming" in done.stderr
    no_traceback(done)
    last = only_session(project)[-1]
    assert last["role"] == "assistant" and last["content"].startswith("the first part ")


def test_a_malformed_first_chunk_is_retried_and_the_run_succeeds(cli, scripted_llm) -> None:
    scripted_llm.push(Reply.malformed(0, text="lost"), Reply.text("fine"))
    done = cli("run", "hi")
    assert done.returncode == 0 and done.stdout.strip() == "fine"
    assert "retrying" in done.stderr and "malformed response" in done.stderr
    no_traceback(done)


def test_a_stalled_server_is_given_up_on_with_a_clear_message(cli, scripted_llm, project) -> None:
    configure(project, "stream_idle_timeout = 0.5\nmax_retries = 1\n")
    scripted_llm.push(Reply.stall(0), Reply.stall(0))
    done = cli("run", "hi")
    assert done.returncode == 1
    assert "sent nothing for 0.5 s (stream_idle_timeout)" in done.stderr
    assert "stream_idle_timeout" in done.stderr.split("hint:")[-1]
    no_traceback(done)


def test_a_refused_connection_is_reported_fast_with_the_url(cli, project) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    done = cli("run", "hi", env={"OPENAI_BASE_URL": url})
    assert done.returncode == 1
    assert f"Cannot connect to {url}: connection refused" in done.stderr
    assert done.stderr.count("retrying") <= 1
    no_traceback(done)


def test_an_unknown_host_is_reported_with_its_name(cli) -> None:
    done = cli("run", "hi", env={"OPENAI_BASE_URL": "http://catbuddy-nowhere.invalid/v1"})
    assert done.returncode == 1
    assert "'catbuddy-nowhere.invalid' cannot be resolved" in done.stderr
    no_traceback(done)


def test_duplicate_tool_call_ids_are_stored_unique_and_every_call_is_answered(
    cli, scripted_llm, project
) -> None:
    (project / "a.txt").write_text("A\n")
    scripted_llm.push(
        Reply.tool_calls(
            ("read_file", {"path": "a.txt"}), ("read_file", {"path": "a.txt"}), tool_call_ids="duplicate"
        ),
        Reply.text("read twice"),
    )
    done = cli("run", "read it twice")
    assert done.returncode == 0, done.stderr
    sent = scripted_llm.requests[-1].messages
    assert protocol_problems(sent) == []
    results = [m for m in sent if m["role"] == "tool"]
    assert len(results) == 2 and all("A" in m["content"] for m in results)


# --- damaged sessions -----------------------------------------------------------------------------


def damaged_session(project: Path) -> str:
    with store_of(project).create(project, "scripted") as session:
        session.append_message({"role": "user", "content": "hello"})
        session.append_message({"role": "assistant", "content": "hi there"})
    bad = [
        {
            "type": "message",
            "id": "m000003",
            "ts": None,
            "role": "assistant",
            "content": None,
            "tool_calls": "x",
        },
        {"type": "message", "id": "m000004", "ts": None, "role": "user", "content": 5},
        {"type": "message", "id": "m000005", "ts": None, "role": "wizard", "content": "abracadabra"},
        {
            "type": "message",
            "id": "m000006",
            "ts": None,
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function"}],
        },
    ]
    with session.path.open("ab") as handle:
        for record in bad:
            handle.write(json.dumps(record).encode() + b"\n")
        handle.write(b'{"type":"message","id":"m000007","role":"user","content":' + b"[" * 100_000 + b"]}\n")
    return session.id


def test_context_shows_a_damaged_session_and_names_what_it_skipped(cli, project) -> None:
    session_id = damaged_session(project)
    done = cli("context", "--no-mcp", "--session", session_id, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [m.get("content") for m in data["messages"][1:]] == ["hello", "hi there"]
    problems = " ".join(data["load_problems"])
    assert "tool_calls is str" in problems and "content is int" in problems and "nested more than" in problems
    no_traceback(done)


def test_continue_on_a_damaged_session_sends_only_valid_messages(cli, scripted_llm, project) -> None:
    damaged_session(project)
    scripted_llm.push(Reply.text("carrying on"))
    done = cli("run", "--continue", "and now?")
    assert done.returncode == 0, done.stderr
    sent = scripted_llm.requests[-1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert protocol_problems(sent) == []
    assert "unreadable line" in done.stderr  # reported, not silent
    no_traceback(done)


def test_sessions_json_lists_a_damaged_session(cli, project) -> None:
    session_id = damaged_session(project)
    done = cli("sessions", "--json")
    assert done.returncode == 0
    assert [s["id"] for s in json.loads(done.stdout)] == [session_id]
    no_traceback(done)


def test_continue_finds_a_session_whose_meta_line_was_deleted_and_says_so(cli, scripted_llm, project) -> None:
    with store_of(project).create(project, "scripted") as session:
        session.append_message({"role": "user", "content": "remember the plan"})
        session.append_message({"role": "assistant", "content": "noted"})
    session.path.write_bytes(session.path.read_bytes().split(b"\n", 1)[1])
    listing = cli("sessions")
    assert session.id in listing.stdout and "no meta line" in listing.stdout
    scripted_llm.push(Reply.text("still here"))
    done = cli("run", "--continue", "what was the plan?")
    assert done.returncode == 0, done.stderr
    assert f"session {session.id}" in done.stderr and "no meta line" in done.stderr
    sent = scripted_llm.requests[-1].messages
    assert [m.get("content") for m in sent[1:3]] == ["remember the plan", "noted"]
    no_traceback(done)


# --- bytes that are not UTF-8 ---------------------------------------------------------------------


def test_a_prompt_with_invalid_utf8_in_argv_is_stored_with_replacement_characters(
    scripted_llm, project, llm_env
) -> None:
    scripted_llm.push(Reply.text("ok"), Reply.text("continued"))
    done = run_bytes(project, llm_env, "run", b"caf\xe9 \xff!")
    assert done.returncode == 0, done.stderr
    first = scripted_llm.requests[0].messages[-1]["content"]
    assert first.startswith("caf\ufffd \ufffd!")
    again = run_bytes(project, llm_env, "run", "--continue", "more")
    assert again.returncode == 0, again.stderr
    assert scripted_llm.requests[-1].messages[1]["content"] == first
    no_traceback(again)


def test_a_prompt_with_invalid_utf8_on_stdin_is_accepted(scripted_llm, project, llm_env) -> None:
    scripted_llm.push(Reply.text("ok"), Reply.text("continued"))
    done = run_bytes(project, llm_env, "run", stdin=b"bad \xc3\x28 bytes\n")
    assert done.returncode == 0, done.stderr
    assert scripted_llm.requests[0].messages[-1]["content"].startswith("bad \ufffd( bytes")
    again = run_bytes(project, llm_env, "run", "--continue", "more")
    assert again.returncode == 0
    no_traceback(again)


# --- ids and config -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--resume", ""),
        ("run", "--resume", "", "hi"),
        ("compact", "--session", ""),
        ("run", "--resume", "../../etc/passwd", "hi"),
        ("context", "--session", " "),
    ],
    ids=["app", "run", "compact", "run-path", "context"],
)
def test_an_invalid_session_id_is_a_usage_error(args: tuple[str, ...], cli, scripted_llm) -> None:
    done = cli(*args)
    assert done.returncode == 2
    assert "session id" in done.stderr and "catbuddy sessions" in done.stderr
    assert scripted_llm.requests == []
    no_traceback(done)


def test_the_app_with_an_unknown_session_id_exits_2_before_starting(cli) -> None:
    done = cli("--resume", "20990101-000000-nothere")
    assert done.returncode == 2 and "no session '20990101-000000-nothere'" in done.stderr
    no_traceback(done)


def test_a_config_file_that_is_not_utf8_exits_2_naming_file_and_key(project, llm_env) -> None:
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "config.toml").write_bytes(b'model = "caf\xe9"\n')
    done = run_bytes(project, llm_env, "run", "hi")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "config.toml" in err and "`model` must be UTF-8 text" in err
    no_traceback(done)


def test_an_invalid_deny_pattern_exits_2_naming_the_key(cli, project) -> None:
    configure(project, '[tools]\ndeny_patterns = ["(unclosed"]\n')
    done = cli("run", "hi")
    assert done.returncode == 2
    assert "`tools.deny_patterns[0]` must be a valid regular expression" in done.stderr
    no_traceback(done)


def test_a_soul_file_that_is_not_utf8_is_skipped_with_a_warning(cli, scripted_llm, project) -> None:
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "SOUL.md").write_bytes(b"Be \xff kind\n")
    scripted_llm.push(Reply.text("ok"))
    done = cli("run", "hi")
    assert done.returncode == 0
    assert "SOUL.md is not UTF-8 text" in done.stderr and "left out of the system prompt" in done.stderr
    assert "## SOUL.md" not in scripted_llm.requests[0].messages[0]["content"]
    no_traceback(done)


def test_count_accepts_a_request_with_bytes_that_are_not_utf8(project, llm_env) -> None:
    request = b'{"messages": [{"role": "user", "content": "caf\xe9"}]}'
    done = run_bytes(project, llm_env, "count", "-", stdin=request)
    assert done.returncode == 0 and int(done.stdout) > 0
    no_traceback(done)
