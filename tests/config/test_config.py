"""Configuration: layers in order, per-model numbers, and errors that name file, key and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import ConfigError, ModelSpec, Settings, load_settings


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    root.mkdir()
    return home, root


def test_defaults_without_any_file(dirs) -> None:
    settings = load_settings(*dirs, env={})
    assert settings.model is None and settings.model_name == "gpt-4o"
    assert settings.approval == "ask"
    assert settings.context.keep_recent_results == 10
    assert settings.context.compact_message_threshold == 50
    assert settings.context.compact_keep_recent == 25
    assert settings.context.safety_margin == 1024


def test_project_config_overrides_global(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", 'model = "gpt-4o"\napproval = "yolo"\n[context]\nsafety_margin = 2000\n')
    write(root / ".catbuddy" / "config.toml", 'model = "gpt-4.1"\n[context]\nkeep_recent_results = 5\n')
    settings = load_settings(home, root, env={})
    assert settings.model == "gpt-4.1"
    assert settings.approval == "yolo"
    assert settings.context.safety_margin == 2000
    assert settings.context.keep_recent_results == 5


def test_environment_overrides_files_and_flags_override_environment(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", 'model = "gpt-4o"\nbase_url = "http://file"\n')
    env = {"CATBUDDY_MODEL": "env-model", "OPENAI_BASE_URL": "http://env/v1"}
    assert load_settings(home, root, env=env).model == "env-model"
    settings = load_settings(home, root, env=env, flags={"model": "flag-model"})
    assert settings.model == "flag-model"
    assert settings.base_url == "http://env/v1"


def test_api_key_comes_from_the_named_environment_variable(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", 'api_key_env = "DEEPSEEK_API_KEY"\n')
    settings = load_settings(home, root, env={"DEEPSEEK_API_KEY": "sk-secret-123", "OPENAI_API_KEY": "other"})
    assert settings.api_key == "sk-secret-123"


def test_api_key_is_never_shown(dirs) -> None:
    settings = load_settings(*dirs, env={"OPENAI_API_KEY": "sk-very-secret"})
    assert "sk-very-secret" not in repr(settings)
    assert "sk-very-secret" not in str(settings.redacted())


def test_bad_value_names_file_key_and_expectation(dirs) -> None:
    home, root = dirs
    path = write(root / ".catbuddy" / "config.toml", '[context]\nkeep_recent_results = "ten"\n')
    with pytest.raises(ConfigError) as error:
        load_settings(home, root, env={})
    message = str(error.value)
    assert str(path) in message
    assert "context.keep_recent_results" in message
    assert "an integer" in message


def test_unknown_key_suggests_the_closest(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", 'aproval = "yolo"\n')
    with pytest.raises(ConfigError, match="Did you mean `approval`"):
        load_settings(home, root, env={})


def test_bad_approval_mode_lists_the_choices(dirs) -> None:
    home, root = dirs
    with pytest.raises(ConfigError, match='"ask", "auto-edit", "yolo"') as error:
        load_settings(home, root, env={"CATBUDDY_APPROVAL": "sometimes"})
    assert "environment variable CATBUDDY_APPROVAL" in str(error.value)


def test_invalid_toml_names_the_file(dirs) -> None:
    home, root = dirs
    path = write(home / "config.toml", "model = \n")
    with pytest.raises(ConfigError, match="valid TOML") as error:
        load_settings(home, root, env={})
    assert str(path) in str(error.value)


def test_per_model_window_and_output(dirs) -> None:
    home, root = dirs
    write(
        home / "config.toml",
        '[models."my-local"]\ncontext_window = 32768\nmax_output_tokens = 4096\nencoding = "cl100k_base"\n',
    )
    settings = load_settings(home, root, env={}, flags={"model": "my-local"})
    assert settings.model_spec() == ModelSpec(32768, 4096, "cl100k_base")
    assert settings.encoding_for() == "cl100k_base"


def test_model_output_must_be_smaller_than_window(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", "[models.x]\ncontext_window = 1000\nmax_output_tokens = 1000\n")
    with pytest.raises(ConfigError, match="smaller than context_window"):
        load_settings(home, root, env={})


def test_known_models_have_sensible_defaults() -> None:
    settings = Settings()
    assert settings.model_spec("gpt-4o").context_window == 128_000
    assert settings.model_spec("gpt-4o-mini").context_window == 128_000
    assert settings.model_spec("gpt-4").context_window == 8_192
    assert settings.model_spec("totally-unknown").context_window == 32_768


def test_configurable_default_for_unknown_models(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", "[models.default]\ncontext_window = 65536\nmax_output_tokens = 2048\n")
    settings = load_settings(home, root, env={}, flags={"model": "something-new"})
    assert settings.model_spec().context_window == 65536


def test_mcp_servers_in_claude_shape(dirs) -> None:
    home, root = dirs
    write(
        root / ".catbuddy" / "config.toml",
        '[mcpServers.time]\ncommand = "mcp-server-time"\nargs = ["--local-timezone", "UTC"]\n'
        '[mcpServers.web]\nurl = "http://127.0.0.1:9000/mcp"\nheaders = { Authorization = "Bearer x" }\n',
    )
    settings = load_settings(home, root, env={}, trust_project=True)  # a project's servers need trust
    assert settings.mcp_servers["time"].args == ("--local-timezone", "UTC")
    assert settings.mcp_servers["web"].url.endswith("/mcp")
    assert "Bearer x" not in str(settings.redacted())


def test_mcp_server_needs_command_or_url(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", "[mcpServers.broken]\nargs = []\n")
    with pytest.raises(ConfigError, match="mcpServers.broken"):
        load_settings(home, root, env={})


def test_mcp_tool_approval_values_are_checked(dirs) -> None:
    home, root = dirs
    write(home / "config.toml", '[mcpServers.t]\ncommand = "x"\ntool_approval = { get_time = "sometimes" }\n')
    with pytest.raises(ConfigError, match="mcpServers.t.tool_approval.get_time"):
        load_settings(home, root, env={})


def test_a_toml_syntax_error_names_its_line_and_column_and_shows_the_line(dirs) -> None:
    # Issue 31: the error read "`(file)` must be valid TOML" without the line and column.
    home, root = dirs
    write(home / "config.toml", 'model = "x"\napproval = [not toml\n')
    with pytest.raises(ConfigError) as error:
        load_settings(home, root, env={})
    assert "(line 2, column 13)" in error.value.message
    assert "approval = [not toml" in error.value.hint


def test_a_model_entry_with_only_its_window_gets_a_default_reply_budget(dirs) -> None:
    # Issue 31: `[models.X]` with only context_window demanded max_output_tokens.
    home, root = dirs
    write(
        home / "config.toml", "[models.big]\ncontext_window = 131072\n[models.tiny]\ncontext_window = 8192\n"
    )
    settings = load_settings(home, root, env={})
    assert settings.models["big"].max_output_tokens == 4096
    assert settings.models["tiny"].max_output_tokens == 2048  # a quarter of a small window
