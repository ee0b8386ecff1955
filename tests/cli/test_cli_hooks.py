"""Hooks around a turn, run headless against the scripted model: JSON on stdin, exit 2 blocks with the
hook's stderr as the reason, a hung hook is killed at its timeout and reported, and a project's hooks run
only once the project is trusted."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from catbuddy.testing.script import Reply


def configure(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def hook(name: str, event: str, command: str, *, matcher: str = "", timeout: float = 10) -> str:
    return (f"[hooks.{name}]\nevent = \"{event}\"\ncommand = '''{command}'''\n"
            f"matcher = \"{matcher}\"\ntimeout = {timeout}\n")  # fmt: skip


def test_a_pre_tool_hook_that_exits_2_blocks_the_call_and_tells_the_model_why(
    cli, project, isolated_home, scripted_llm
):
    configure(isolated_home, hook("guard", "pre_tool", "cat > seen.json; echo 'no writes on Fridays' >&2; exit 2",
                                  matcher="write_file"))  # fmt: skip
    scripted_llm.push(Reply.tool_call("write_file", {"path": "a.txt", "content": "x"}), Reply.text("ok"))

    done = cli("run", "write a.txt")

    assert done.returncode == 0, done.stderr
    assert not (project / "a.txt").exists()
    tool_message = scripted_llm.requests[1].messages[-1]
    assert "no writes on Fridays" in tool_message["content"] and "hook guard" in tool_message["content"]
    seen = json.loads((project / "seen.json").read_text())
    assert seen["event"] == "pre_tool" and seen["tool"] == "write_file"
    assert seen["arguments"] == {"path": "a.txt", "content": "x"} and seen["session_id"]


def test_a_matcher_limits_the_hook_to_its_tools(cli, project, isolated_home, scripted_llm):
    configure(isolated_home, hook("guard", "pre_tool", "exit 2", matcher="exec"))
    scripted_llm.push(Reply.tool_call("write_file", {"path": "a.txt", "content": "x"}), Reply.text("ok"))

    assert cli("run", "write a.txt").returncode == 0
    assert (project / "a.txt").read_text() == "x"


def test_a_post_tool_hook_sees_the_result_and_its_exit_2_feedback_reaches_the_model(
    cli, project, isolated_home, scripted_llm
):
    (project / "calc.py").write_text("x = 1\n")
    configure(
        isolated_home, hook("lint", "post_tool", "cat > seen.json; echo 'lint: x is unused' >&2; exit 2")
    )
    scripted_llm.push(Reply.tool_call("read_file", {"path": "calc.py"}), Reply.text("ok"))

    assert cli("run", "read calc.py").returncode == 0
    seen = json.loads((project / "seen.json").read_text())
    assert seen["event"] == "post_tool" and "x = 1" in seen["result"]
    assert "lint: x is unused" in scripted_llm.requests[1].messages[-1]["content"]


def test_a_prompt_hook_can_add_context_or_block_the_message(cli, project, isolated_home, scripted_llm):
    configure(isolated_home, hook("ctx", "user_prompt_submit", "echo 'branch: main'"))
    scripted_llm.push(Reply.text("ok"))
    assert cli("run", "hello").returncode == 0
    assert "<hook-context>\nbranch: main\n</hook-context>" in scripted_llm.requests[0].messages[-1]["content"]

    configure(
        isolated_home,
        hook("no", "user_prompt_submit", "grep -q secret && { echo 'no secrets here' >&2; exit 2; }; exit 0"),
    )
    done = cli("run", "my secret is 42")
    assert done.returncode == 1
    assert "Hook no blocked the message: no secrets here" in done.stderr
    assert len(scripted_llm.requests) == 1  # nothing more was sent


def test_a_stop_hook_that_exits_2_sends_the_model_back_to_work(cli, project, isolated_home, scripted_llm):
    configure(
        isolated_home,
        hook("tests", "stop", "test -e once && exit 0; touch once; echo 'tests fail: run them' >&2; exit 2"),
    )
    scripted_llm.push(Reply.text("done"), Reply.text("fixed the tests"))

    done = cli("run", "--json", "fix it")

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "fixed the tests"
    assert scripted_llm.requests[1].messages[-1] == {
        "role": "user",
        "content": "[hook tests (stop)]: tests fail: run them",
    }


def test_a_hung_hook_is_killed_at_its_timeout_and_reported(cli, project, isolated_home, scripted_llm):
    configure(isolated_home, hook("slow", "user_prompt_submit", "echo $$ > pid; sleep 60", timeout=0.5))
    scripted_llm.push(Reply.text("still here"))

    started = time.monotonic()
    done = cli("run", "hello")

    assert done.returncode == 0 and time.monotonic() - started < 30
    assert "hook slow (user_prompt_submit) took longer than 0.5 s and was killed" in done.stderr
    pid = int((project / "pid").read_text())
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


def test_a_project_hook_runs_only_in_a_trusted_project(cli, project, scripted_llm):
    (project / ".catbuddy").mkdir()
    (project / ".catbuddy" / "config.toml").write_text(hook("mark", "user_prompt_submit", "touch hook-ran"))
    scripted_llm.push(Reply.text("one"), Reply.text("two"))

    assert cli("run", "hello").returncode == 0
    assert not (project / "hook-ran").exists()

    assert cli("run", "--trust-project", "hello").returncode == 0
    assert (project / "hook-ran").exists()
