"""`catbuddy run` as a subprocess: output formats, stdin, exit codes, locks, sessions."""

from __future__ import annotations

import json

from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home


def sessions_of(project) -> SessionStore:
    return SessionStore(Workspace.at(project, default_home()).sessions_dir)


def test_text_mode_prints_the_reply_on_stdout_and_tool_lines_on_stderr(cli, scripted_llm, project):
    (project / "a.txt").write_text("hello from a\n")
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.txt"}), Reply.text("It says hello."))

    done = cli("run", input="What does a.txt say?\n")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It says hello."
    assert "→ read_file a.txt" in done.stderr and "✓ read_file" in done.stderr
    assert "catbuddy run --resume" in done.stderr
    user = scripted_llm.requests[0].messages[-1]["content"]
    assert user.startswith("What does a.txt say?")
    (info,) = sessions_of(project).list()
    listing = cli("sessions")
    assert listing.returncode == 0
    assert info.id in listing.stdout and "What does a.txt say?" in listing.stdout


def test_a_failed_run_exits_1_with_the_error_on_stderr(cli, scripted_llm):
    scripted_llm.push(Reply.error(401, "Incorrect API key provided"))

    done = cli("run", "hi", "--json")

    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["ok"] is False and result["reason"] == "error"
    assert result["errors"] and "test-key" not in done.stdout + done.stderr


def test_a_run_that_failed_before_any_answer_does_not_offer_to_continue_it(cli, scripted_llm):
    # Issue 31: it advertised `continue with: catbuddy run --resume …` for a session holding only the
    # failed prompt.
    scripted_llm.push(Reply.error(401, "Incorrect API key provided"))

    done = cli("run", "hi")

    assert done.returncode == 1
    assert "continue with" not in done.stderr
    assert "holds only the prompt; once fixed, run it again" in done.stderr


def test_a_run_that_was_answered_says_how_to_continue_it(cli, scripted_llm):
    scripted_llm.push(Reply.text("hello"))

    done = cli("run", "hi")

    assert done.returncode == 0 and "continue with: catbuddy run --resume " in done.stderr


def test_no_prompt_exits_2(cli):
    done = cli("run", input="   \n")
    assert done.returncode == 2
    assert "prompt is empty" in done.stderr


def test_json_and_stream_json_together_exit_2(cli):
    done = cli("run", "hi", "--json", "--stream-json")
    assert done.returncode == 2
    assert "either --json or --stream-json" in done.stderr


def test_a_bad_approval_value_exits_2_and_names_it(cli):
    done = cli("run", "hi", env={"CATBUDDY_APPROVAL": "sometimes"})
    assert done.returncode == 2
    # Names where the value came from, the key, what is allowed and what it got.
    assert "CATBUDDY_APPROVAL" in done.stderr and "approval" in done.stderr
    assert '"yolo"' in done.stderr and "sometimes" in done.stderr


def test_a_bad_flag_exits_2(cli):
    done = cli("run", "hi", "--no-such-flag")
    assert done.returncode == 2
    assert "--no-such-flag" in done.stderr


def test_resuming_a_session_another_process_holds_is_refused(cli, scripted_llm, project):
    store = sessions_of(project)
    held = store.create(project, "scripted")
    try:
        done = cli("run", "--resume", held.id, "hi")
    finally:
        held.close()

    assert done.returncode == 2
    assert f"session {held.id} is open in another catbuddy process" in done.stderr
    assert "Traceback" not in done.stderr
    assert scripted_llm.requests == []


def test_resuming_an_unknown_session_exits_2(cli):
    done = cli("run", "--resume", "20990101-000000-nothere", "hi")
    assert done.returncode == 2
    assert "nothere" in done.stderr and "Traceback" not in done.stderr
