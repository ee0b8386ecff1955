"""`catbuddy run` with no API key anywhere: the first failing request says the key is missing and how
to set it, in every output format, after one request (an auth error is not retried)."""

from __future__ import annotations

import json

import pytest

from catbuddy.testing.script import Reply

NO_KEY = {"OPENAI_API_KEY": ""}


@pytest.fixture
def keyed_llm(scripted_llm_factory):
    return scripted_llm_factory([Reply.text("never sent")], api_key="the-real-key")


def test_text_mode_names_the_missing_key_and_the_fix(cli, keyed_llm):
    done = cli("run", "hi", env={**NO_KEY, "OPENAI_BASE_URL": keyed_llm.base_url})

    assert done.returncode == 1
    assert "error: No API key configured" in done.stderr and "OPENAI_API_KEY" in done.stderr
    assert "hint: Set one: `export OPENAI_API_KEY=sk-...`" in done.stderr
    assert "Incorrect API key" not in done.stderr and "retrying" not in done.stderr
    assert len(keyed_llm.requests) == 1


def test_stream_json_carries_the_missing_key_error_event(cli, keyed_llm):
    done = cli("run", "--stream-json", "hi", env={**NO_KEY, "OPENAI_BASE_URL": keyed_llm.base_url})

    events = [json.loads(line) for line in done.stdout.splitlines()]
    (error,) = [e for e in events if e["kind"] == "error"]
    assert error["message"].startswith("No API key configured") and "config.toml" in error["hint"]
    assert not [e for e in events if e["kind"] == "retry"]
    assert done.returncode == 1


def test_json_mode_lists_it_in_errors(cli, keyed_llm):
    done = cli("run", "--json", "hi", env={**NO_KEY, "OPENAI_BASE_URL": keyed_llm.base_url})

    result = json.loads(done.stdout)
    assert result["ok"] is False and result["errors"][0].startswith("No API key configured")


def test_a_key_set_in_another_variable_named_by_the_config_is_used(cli, keyed_llm, isolated_home):
    (isolated_home / "config.toml").write_text('api_key_env = "MY_KEY"\n')

    done = cli("run", "hi", env={**NO_KEY, "MY_KEY": "the-real-key", "OPENAI_BASE_URL": keyed_llm.base_url})

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "never sent"


def test_the_missing_key_names_the_variable_the_config_names(cli, keyed_llm, isolated_home):
    (isolated_home / "config.toml").write_text('api_key_env = "MY_KEY"\n')

    done = cli("run", "hi", env={**NO_KEY, "OPENAI_BASE_URL": keyed_llm.base_url})

    assert done.returncode == 1 and "MY_KEY" in done.stderr and "export MY_KEY=" in done.stderr


def test_a_keyless_local_server_needs_no_key(cli, scripted_llm):
    scripted_llm.push(Reply.text("fine without a key"))

    done = cli("run", "hi", env=NO_KEY)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "fine without a key"


def test_no_key_and_no_base_url_fails_at_once_with_the_fix(cli):
    done = cli("run", "hi", env={**NO_KEY, "OPENAI_BASE_URL": ""})

    assert done.returncode == 1
    assert "No API key configured: https://api.openai.com/v1 needs one" in done.stderr
    assert "export OPENAI_API_KEY=" in done.stderr and "retrying" not in done.stderr
