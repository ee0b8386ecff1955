"""Starting like the others: `catbuddy "PROMPT"` opens the app with that message sent, options may come
first; `catbuddy -p "PROMPT"` is `catbuddy run "PROMPT"`. The typer-free argument split (launch.py) is
kept equal to the command line's commands and global options."""

from __future__ import annotations

import subprocess

import pytest
import typer
from test_cli_plain_catbuddy import ALT_SCREEN, CTRL_C, ENTRY, PTY_TIMEOUT, Terminal

from catbuddy.cli import app
from catbuddy.launch import COMMAND_NAMES, VALUE_OPTIONS, split_arguments
from catbuddy.testing.script import Reply


@pytest.fixture
def terminal_env(llm_env: dict[str, str]) -> dict[str, str]:
    return {**llm_env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}


def _send_and_see_the_reply(args: list[str], project, terminal_env, scripted_llm) -> str:
    scripted_llm.push(Reply.text("the bug is on line 3"))
    terminal = Terminal([*ENTRY, *args], terminal_env, project)
    try:
        terminal.read_until(ALT_SCREEN)
        terminal.read_until("the bug is on line 3")  # the reply streamed into the app
        terminal.type(CTRL_C)
        terminal.type(CTRL_C)
        output = terminal.read_until(None)
    finally:
        terminal.close()
    return output


def test_a_prompt_argument_opens_the_app_with_that_message_sent(project, terminal_env, scripted_llm):
    output = _send_and_see_the_reply(["fix the bug in app.py"], project, terminal_env, scripted_llm)

    assert scripted_llm.requests[0].messages[-1]["content"].startswith("fix the bug in app.py")
    assert "Resume this session with" in output and "Traceback" not in output


def test_options_may_come_before_the_prompt(project, terminal_env, scripted_llm):
    _send_and_see_the_reply(["--approval", "ask", "fix the bug"], project, terminal_env, scripted_llm)

    assert scripted_llm.requests[0].messages[-1]["content"].startswith("fix the bug")


def test_print_flag_runs_headless(project, llm_env, scripted_llm):
    scripted_llm.push(Reply.text("headless answer"))
    done = subprocess.run(
        [*ENTRY, "-p", "say it", "--json"], cwd=project, env=llm_env, capture_output=True, text=True,
        timeout=PTY_TIMEOUT,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert '"result": "headless answer"' in done.stdout


def test_a_command_name_is_the_command_not_a_prompt() -> None:
    assert split_arguments(["init"]).first_message is None
    assert split_arguments(["-m", "gpt-4o", "run", "hi"]).args == ["-m", "gpt-4o", "run", "hi"]
    assert split_arguments(["-p", "hi", "--json"]).args == ["run", "hi", "--json"]
    assert split_arguments(["-m", "gpt-4o", "hi there"]).first_message == "hi there"


def test_the_split_knows_every_command_and_every_global_option_that_takes_a_value() -> None:
    group = typer.main.get_command(app)
    assert set(group.commands) == COMMAND_NAMES
    taking_values = {
        name
        for param in group.params
        if param.param_type_name == "option" and not getattr(param, "is_flag", False)
        for name in param.opts
    }
    assert taking_values == VALUE_OPTIONS
