"""`run --stream-json` announces approval requests as events; `--approvals-from-stdin` answers them."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from catbuddy.agent.events import event_from_json
from catbuddy.testing.script import Reply


def events_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_a_headless_approval_request_is_announced_and_refused(cli, scripted_llm, project):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch made.txt"}), Reply.text("I could not."))

    result = cli("run", "--stream-json", "--approval", "ask", "make a file")

    assert result.returncode == 0, result.stderr
    events = events_of(result.stdout)
    request = next(e for e in events if e["kind"] == "approval_request")
    resolved = next(e for e in events if e["kind"] == "approval_resolved")
    assert request["answerable"] is False and request["preview"] == "touch made.txt"
    assert resolved["call_id"] == request["call_id"] and resolved["decision"] == "refused_headless"
    assert not (project / "made.txt").exists()


def test_every_line_of_a_stream_parses_back_into_an_event(cli, scripted_llm, project):
    (project / "a.txt").write_text("alpha\n")
    scripted_llm.push(
        Reply.tool_call("read_file", {"path": "a.txt"}),
        Reply.tool_call("exec", {"command": "touch b.txt"}),
        Reply.text("Done."),
    )

    result = cli("run", "--stream-json", "--approval", "ask", "read and touch")

    assert result.returncode == 0, result.stderr
    for data in events_of(result.stdout):
        assert event_from_json(data).to_json() == data


def test_approvals_from_stdin_lets_another_program_answer(scripted_llm, project, llm_env):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch made.txt"}), Reply.text("Made it."))
    process = subprocess.Popen(
        [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), "run", "--stream-json",
         "--approval", "ask", "--approvals-from-stdin", "make a file"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=llm_env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    events = []
    deadline = time.monotonic() + 60
    for line in process.stdout:
        event = json.loads(line)
        events.append(event)
        if event["kind"] == "approval_request":
            assert event["answerable"] is True
            process.stdin.write(json.dumps({"call_id": event["call_id"], "choice": "allow_once"}) + "\n")
            process.stdin.flush()
        if event["kind"] == "turn_end" or time.monotonic() > deadline:
            break
    process.stdin.close()
    process.wait(30)

    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    assert (project / "made.txt").exists()
    resolved = next(e for e in events if e["kind"] == "approval_resolved")
    assert resolved["decision"] == "allow_once"


def test_closing_stdin_denies_what_is_waiting(cli, scripted_llm, project):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch made.txt"}), Reply.text("Fine, I won't."))

    result = cli("run", "--stream-json", "--approval", "ask", "--approvals-from-stdin", "make a file", input="")

    assert result.returncode == 0, result.stderr
    resolved = next(e for e in events_of(result.stdout) if e["kind"] == "approval_resolved")
    assert resolved["decision"] == "deny"
    assert not (project / "made.txt").exists()


def test_a_bad_answer_line_is_reported_and_ignored(cli, scripted_llm, project):
    scripted_llm.push(Reply.tool_call("exec", {"command": "touch made.txt"}), Reply.text("ok"))

    result = cli(
        "run", "--stream-json", "--approval", "ask", "--approvals-from-stdin", "make a file",
        input='{"call_id": 5}\nnot json\n',
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    notices = [e["text"] for e in events_of(result.stdout) if e["kind"] == "notice"]
    assert any("call_id" in n for n in notices) and any("not JSON" in n for n in notices)
    assert "Traceback" not in result.stderr


def test_approvals_from_stdin_needs_stream_json(cli):
    result = cli("run", "--approvals-from-stdin", "hi")

    assert result.returncode == 2 and "--stream-json" in result.stderr
