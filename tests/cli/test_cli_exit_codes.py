"""Exit codes a newcomer meets: a bad `--resume` never opens the app, `count` never waits silently on a
terminal, and "nothing to compact" is not a failure. The terminal cases run under a real pty."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home

PTY_TIMEOUT = 30.0
ALT_SCREEN = "\x1b[?1049h"  # what Textual writes first when the app opens


def run_in_pty(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run `catbuddy ARGS` with stdin, stdout and stderr on a pseudo-terminal; (exit code, output)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "catbuddy.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + PTY_TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        else:
            process.kill()
            raise AssertionError(f"catbuddy {' '.join(args)} still waits after {PTY_TIMEOUT} s at a terminal")
        code = process.wait(timeout=PTY_TIMEOUT)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_resume_of_an_unknown_id_exits_2_without_opening_the_app(project, llm_env):
    code, output = run_in_pty(["--cwd", str(project), "--resume", "20250101-000000-abcdef"], llm_env, project)

    assert code == 2
    assert "no session '20250101-000000-abcdef'" in output and "catbuddy sessions" in output
    assert ALT_SCREEN not in output


def test_resume_of_an_id_that_cannot_name_a_session_exits_2(project, llm_env):
    code, output = run_in_pty(["--cwd", str(project), "--resume", "../etc"], llm_env, project)

    assert code == 2 and "--resume '../etc'" in output
    assert ALT_SCREEN not in output


def test_continue_of_an_unknown_id_in_another_directory_is_not_found_here(cli, scripted_llm, project, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    with SessionStore(Workspace.at(other, default_home()).sessions_dir).create(other, "scripted") as session:
        elsewhere = session.id

    done = cli("--resume", elsewhere)

    assert done.returncode == 2 and f"no session {elsewhere!r}" in done.stderr


def test_count_at_a_terminal_says_what_it_expects_and_exits_2(project, llm_env):
    code, output = run_in_pty(["--cwd", str(project), "count"], llm_env, project)

    assert code == 2
    assert "count reads a chat request JSON" in output
    assert "file argument or standard input" in output and "catbuddy count < request.json" in output


def test_count_with_dash_at_a_terminal_exits_2_too(project, llm_env):
    code, output = run_in_pty(["--cwd", str(project), "count", "-"], llm_env, project)
    assert code == 2 and "pipe one in" in output


def test_count_at_a_terminal_with_a_file_argument_counts_it(project, llm_env):
    request = project / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "hello"}]}))

    code, output = run_in_pty(["--cwd", str(project), "count", str(request)], llm_env, project)

    assert code == 0 and output.strip().isdigit() and int(output.strip()) > 0


def test_count_reads_piped_standard_input(cli):
    done = cli("count", input=json.dumps({"messages": [{"role": "user", "content": "hello"}]}))
    assert done.returncode == 0 and int(done.stdout.strip()) > 0


def test_count_with_empty_piped_input_names_the_problem(cli):
    done = cli("count", input="")
    assert done.returncode == 2 and "standard input is not valid JSON" in done.stderr


def test_compact_with_a_short_history_prints_its_message_and_exits_0(cli, scripted_llm, project):
    scripted_llm.push(Reply.text("hello"))
    assert cli("run", "hi").returncode == 0

    done = cli("compact")

    assert done.returncode == 0, done.stderr
    assert "Nothing to compact yet" in done.stdout
    assert len(scripted_llm.requests) == 1  # no summary was asked for


def test_compact_without_any_session_exits_0_with_its_message(cli):
    done = cli("compact")
    assert done.returncode == 0 and "No session to compact" in done.stdout


def test_compact_of_an_unknown_session_is_bad_usage(cli):
    done = cli("compact", "--session", "20250101-000000-abcdef")
    assert done.returncode == 2 and "no session" in done.stderr


def test_the_app_on_a_session_open_elsewhere_closes_and_says_so_with_exit_2(project, llm_env):
    # The loop fails to start inside the app; the command's one error handler says why once the
    # terminal is back (docs/architecture.md §14).
    store = SessionStore(Workspace.at(project, default_home()).sessions_dir)
    with store.create(project, "scripted") as held:
        code, output = run_in_pty(["--cwd", str(project), "--resume", held.id], llm_env, project)

    assert code == 2
    tail = output.rsplit("\x1b[?1049l", 1)[-1]  # what was printed after the app left the screen
    assert f"catbuddy: session {held.id} is open in another catbuddy process" in tail
    assert "Traceback" not in output
