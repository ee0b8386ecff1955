"""What an exec child's environment keeps and drops."""

from __future__ import annotations

from catbuddy.sandbox.environment import exec_environment

BASE = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "OPENAI_API_KEY": "sk-abcdefghijklmnopqrstuvwx",
    "MY_PROVIDER_KEY_NAME": "x",
    "GITHUB_TOKEN": "ghp_x",
    "AWS_SECRET_ACCESS_KEY": "s",
    "DB_PASSWORD": "p",
    "SOME_PASSWD": "p",
    "GCP_CREDENTIALS": "c",
    "DATABASE_URL": "postgres://me:hunter2@db/x",
    "INNOCENT": "sk-abcdefghijklmnopqrstuvwx2",
    "COPY_OF_KEY": "held-secret-value",
    "DEEPSEEK": "d",
    "GIT_AUTHOR_NAME": "Me",
}


def test_secret_names_key_variables_and_secret_values_are_dropped() -> None:
    result = exec_environment(BASE, key_variables=("DEEPSEEK",), secrets=("held-secret-value",))
    assert set(result.env) - {"PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "TERM"} == {
        "PATH",
        "HOME",
        "GIT_AUTHOR_NAME",
    }
    assert set(result.dropped) == set(BASE) - {"PATH", "HOME", "GIT_AUTHOR_NAME"}


def test_the_allow_list_lets_named_variables_through() -> None:
    result = exec_environment(BASE, allow=("GITHUB_TOKEN", "AWS_*"))
    assert result.env["GITHUB_TOKEN"] == "ghp_x" and result.env["AWS_SECRET_ACCESS_KEY"] == "s"
    assert "OPENAI_API_KEY" not in result.env


def test_pagers_and_prompts_are_disabled() -> None:
    env = exec_environment({"PAGER": "less"}).env
    assert env["PAGER"] == "cat" and env["GIT_TERMINAL_PROMPT"] == "0" and env["TERM"] == "dumb"
