"""The [memory] section: defaults from the design, layered like the others, every key validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import ConfigError, load_settings


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    (root / ".catbuddy").mkdir(parents=True)
    home.mkdir()
    return home, root


def test_the_defaults_are_auto_five_idle_minutes_200_lines_and_25_kb(dirs) -> None:
    memory = load_settings(*dirs, env={}).memory
    assert memory.dream == "auto" and memory.dream_model == ""
    assert memory.dream_idle_minutes == 5
    assert (memory.memory_max_lines, memory.memory_max_bytes) == (200, 25 * 1024)
    assert memory.max_dream_failures == 3


def test_the_project_overrides_the_global_key_by_key(dirs) -> None:
    home, root = dirs
    (home / "config.toml").write_text('[memory]\ndream = "ask"\ndream_model = "small"\n')
    (root / ".catbuddy" / "config.toml").write_text("[memory]\nmemory_max_lines = 120\n")
    memory = load_settings(home, root, env={}).memory
    assert (memory.dream, memory.dream_model, memory.memory_max_lines) == ("ask", "small", 120)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('dream = "sometimes"', '`memory.dream` must be one of "auto", "ask", "off", got \'sometimes\''),
        ("dream_idle_minutes = -1", "`memory.dream_idle_minutes` must be a number between 0 and 1440"),
        ("memory_max_lines = 3", "`memory.memory_max_lines` must be an integer ≥ 10"),
        ("memory_max_bytes = true", "`memory.memory_max_bytes` must be an integer ≥ 1024"),
        ("dream_modle = 'x'", "Did you mean `memory.dream_model`?"),
    ],
)
def test_a_bad_value_names_the_file_the_key_and_what_is_expected(dirs, text: str, message: str) -> None:
    home, root = dirs
    config = root / ".catbuddy" / "config.toml"
    config.write_text(f"[memory]\n{text}\n")
    with pytest.raises(ConfigError) as error:
        load_settings(home, root, env={})
    assert str(config) in str(error.value) and message in str(error.value)
