from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.tui.screens.setup_config import check_connection, update_config


def test_update_keeps_existing_keys_tables_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# mine\nmodel = "old"\napproval = "auto-edit"\n\n[context]\nauto_compact = false\n')
    update_config(path, {"model": "gpt-4o", "base_url": "http://h/v1"})
    text = path.read_text()
    data = tomllib.loads(text)
    assert data["model"] == "gpt-4o" and data["base_url"] == "http://h/v1"
    assert data["approval"] == "auto-edit" and data["context"] == {"auto_compact": False}
    assert "# mine" in text


def test_update_creates_the_file_and_only_chmods_when_a_key_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "home" / "config.toml"
    update_config(path, {"model": "m", "api_key": 'se"cret'})
    assert tomllib.loads(path.read_text())["api_key"] == 'se"cret'
    assert path.stat().st_mode & 0o777 == 0o600


def test_update_refuses_a_broken_file_and_leaves_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("model = \n")
    with pytest.raises(ValueError, match="not valid TOML"):
        update_config(path, {"model": "m"})
    assert path.read_text() == "model = \n"


async def test_connection_check_lists_models_of_a_live_endpoint() -> None:
    with ScriptedLLM([]) as llm:
        result = await check_connection(llm.base_url, "test", "scripted")
    assert result.ok, result.message


async def test_connection_check_explains_an_unreachable_endpoint() -> None:
    result = await check_connection("http://127.0.0.1:9/v1", "k", "m")
    assert not result.ok
    assert "Could not reach" in result.message and "/v1" in result.message


async def test_connection_check_names_a_missing_key_as_missing() -> None:
    with ScriptedLLM([], api_key="secret") as llm:
        missing = await check_connection(llm.base_url, "", "scripted", key_env="MY_KEY")
        wrong = await check_connection(llm.base_url, "not-it", "scripted", key_env="MY_KEY")
        right = await check_connection(llm.base_url, "secret", "scripted", key_env="MY_KEY")
    assert not missing.ok and "none was sent" in missing.message and "MY_KEY" in missing.message
    assert not wrong.ok and "refused the key" in wrong.message
    assert right.ok
