"""Config files that are not UTF-8, regexes that do not compile, timeouts: exit-2 errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import ConfigError, load_settings


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    (root / ".catbuddy").mkdir(parents=True)
    return home, root


def test_a_config_file_that_is_not_utf8_names_the_file_the_key_and_the_fix(dirs) -> None:
    home, root = dirs
    path = root / ".catbuddy" / "config.toml"
    path.write_bytes(b'approval = "ask"\nmodel = "caf\xe9"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(home, root, env={})
    text = str(error.value)
    assert str(path) in text and "`model` must be UTF-8 text" in text
    assert "Line 2 has the byte 0xe9" in text and "Re-save the file as UTF-8" in text


def test_a_non_utf8_byte_outside_any_key_names_the_line(dirs) -> None:
    home, root = dirs
    (home / "config.toml").write_bytes(b"# caf\xe9 notes\n")
    with pytest.raises(ConfigError, match=r"`\(line 1\)` must be UTF-8 text"):
        load_settings(home, root, env={})


def test_an_invalid_deny_pattern_names_the_pattern_and_how_to_fix_it(dirs) -> None:
    home, root = dirs
    path = home / "config.toml"
    path.write_text('[tools]\ndeny_patterns = ["curl .*\\\\|", "rm (-rf"]\n')
    with pytest.raises(ConfigError) as error:
        load_settings(home, root, env={})
    text = str(error.value)
    assert str(path) in text and "`tools.deny_patterns[1]` must be a valid regular expression" in text
    assert "'rm (-rf'" in text and "missing )" in text and "backslash" in text


def test_valid_deny_patterns_load(dirs) -> None:
    home, root = dirs
    (home / "config.toml").write_text('[tools]\ndeny_patterns = ["^git push --force", "curl .*\\\\| *sh"]\n')
    assert load_settings(home, root, env={}).tools.deny_patterns == ("^git push --force", "curl .*\\| *sh")


def test_timeouts_have_defaults_and_are_validated(dirs) -> None:
    home, root = dirs
    settings = load_settings(home, root, env={})
    assert (settings.connect_timeout, settings.stream_idle_timeout, settings.request_timeout) == (
        10.0,
        60.0,
        600.0,
    )
    (home / "config.toml").write_text("connect_timeout = 3\nstream_idle_timeout = 120\n")
    settings = load_settings(home, root, env={})
    assert (settings.connect_timeout, settings.stream_idle_timeout) == (3.0, 120.0)
    (home / "config.toml").write_text('stream_idle_timeout = "soon"\n')
    with pytest.raises(ConfigError, match="`stream_idle_timeout` must be a number between 0.1 and 3600"):
        load_settings(home, root, env={})
    (home / "config.toml").write_text("connect_timeout = 0\n")
    with pytest.raises(ConfigError, match="`connect_timeout` must be a number between 0.1 and 600"):
        load_settings(home, root, env={})


def test_an_unreadable_config_file_is_named(dirs, tmp_path: Path) -> None:
    home, root = dirs
    (home / "config.toml").mkdir()  # a folder where the file should be: never silently skipped
    with pytest.raises(ConfigError):
        load_settings(home, root, env={})
