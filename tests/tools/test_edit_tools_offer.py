"""Which editing tool a model is offered: apply_patch to the families trained on Codex's format, edit_file
to the others, and whatever `[models."name"] edit_tools` says."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.agent.toolset import build_registry
from catbuddy.config import ConfigError, Settings, load_settings
from catbuddy.tools.registry import edit_tools_for, offer_edit_tools


@pytest.mark.parametrize(
    ("model", "tools"),
    [
        ("gpt-4.1", ("apply_patch",)),
        ("gpt-4.1-mini", ("apply_patch",)),
        ("gpt-5", ("apply_patch",)),
        ("openai/gpt-5-codex", ("apply_patch",)),
        ("o3", ("apply_patch",)),
        ("o4-mini", ("apply_patch",)),
        ("codex-mini-latest", ("apply_patch",)),
        ("gpt-4o", ("edit_file",)),
        ("claude-sonnet-4", ("edit_file",)),
        ("qwen2.5-coder:32b", ("edit_file",)),
    ],
)
def test_default_by_family(model: str, tools: tuple[str, ...]) -> None:
    assert edit_tools_for(model, Settings().model_spec(model).edit_tools) == tools


def test_a_model_table_chooses(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    root.mkdir()
    (home / "config.toml").write_text(
        '[models."gpt-5"]\ncontext_window = 400000\nmax_output_tokens = 128000\n'
        'edit_tools = ["edit_file", "apply_patch"]\n'
    )
    settings = load_settings(home, root, env={})
    assert edit_tools_for("gpt-5", settings.model_spec("gpt-5").edit_tools) == ("edit_file", "apply_patch")


def test_an_unknown_tool_name_is_a_config_error(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    root.mkdir()
    (home / "config.toml").write_text('[models.default]\nedit_tools = ["sed"]\n')
    with pytest.raises(ConfigError, match="edit_tools"):
        load_settings(home, root, env={})


def test_offering_swaps_the_registered_tools() -> None:
    registry = build_registry()
    offer_edit_tools(registry, ("apply_patch",))
    assert "apply_patch" in registry.names() and "edit_file" not in registry.names()
    assert registry.names()[-1] == "apply_patch"  # after recall: the cached prefix keeps its order
    offer_edit_tools(registry, ("edit_file", "apply_patch"))
    assert {"edit_file", "apply_patch"} <= set(registry.names())
    offer_edit_tools(registry, ("edit_file",))
    assert "apply_patch" not in registry.names()
