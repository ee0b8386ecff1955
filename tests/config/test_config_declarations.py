"""Each setting is declared once (catbuddy/config.py), and README.md's configuration block documents exactly
the declared settings, each with its real default (docs/architecture.md §11)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from catbuddy import trust
from catbuddy.config import FALLBACK_MODEL_SPEC, SCHEMA, ConfigError, load_settings
from catbuddy.config_checks import at_least, boolean, string_list
from catbuddy.config_schema import MISSING, Declared, Schema, Section, setting, table

README = Path(__file__).parents[2] / "README.md"
COMMENTED_SETTING = re.compile(r"^# (?=[A-Za-z_]+ = )")  # `# api_key = "sk-…"`: documented, not suggested
NOTHING_TO_SHOW = (None, "", (), {})  # defaults an example has to replace to say anything


def readme_block() -> str:
    """The ```toml block of README.md's "## Configuration" section."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Configuration\n") :]
    start = section.index("```toml\n") + len("```toml\n")
    return section[start : section.index("```", start)]


def documented() -> dict[str, Any]:
    lines = [COMMENTED_SETTING.sub("", line) for line in readme_block().splitlines()]
    return tomllib.loads("\n".join(lines))


def check(declared: Declared, value: Any) -> Any:
    """The value as catbuddy reads it (lists as tuples, numbers as floats where declared so)."""
    return declared.setting.check("README.md", declared.key, value)


def test_the_readme_block_is_a_config_file_catbuddy_accepts(tmp_path: Path) -> None:
    # Every key it shows exists (unknown keys are errors) and every value it shows is valid.
    home, root = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    root.mkdir()
    (home / "config.toml").write_text(readme_block(), encoding="utf-8")
    settings = load_settings(home, root, env={})
    assert settings.model == "gpt-4o" and "time" in settings.mcp_servers


def test_the_commented_out_settings_of_the_readme_are_valid_too() -> None:
    SCHEMA.validate("README.md", documented())


@pytest.mark.parametrize("key", list(SCHEMA.top))
def test_every_top_level_setting_is_documented_with_its_default(key: str) -> None:
    declared = SCHEMA.top[key]
    shown = documented()
    assert key in shown, f"README.md's configuration block does not document `{key}`"
    if declared.default is not None:  # None: optional, the README shows an example
        assert check(declared, shown[key]) == declared.default


@pytest.mark.parametrize(
    ("section", "key"), [(section, key) for section, keys in SCHEMA.sections.items() for key in keys]
)
def test_every_section_setting_is_documented_with_its_default(section: str, key: str) -> None:
    declared = SCHEMA.sections[section][key]
    shown = documented().get(section, {})
    assert key in shown, f"README.md's configuration block does not document `{section}.{key}`"
    assert check(declared, shown[key]) == declared.default


@pytest.mark.parametrize("attribute", list(SCHEMA.entries))
def test_every_key_of_an_entry_table_is_documented(attribute: str) -> None:
    entries = SCHEMA.entries[attribute]
    shown = documented()[entries.names[0]]
    keys = {key for entry in shown.values() for key in entry}
    assert set(entries.settings) | set(entries.declaration.ignored) <= keys
    for key, declared in entries.settings.items():
        if declared.default is MISSING or declared.default in NOTHING_TO_SHOW:
            continue  # required, or nothing but an example says anything
        values = [check(declared, entry[key]) for entry in shown.values() if key in entry]
        assert declared.default in values, f"no [{entries.names[0]}.…] shows `{key}`'s default"


def test_the_readme_shows_what_unknown_models_get() -> None:
    shown = documented()["models"]["default"]
    assert (shown["context_window"], shown["max_output_tokens"]) == (
        FALLBACK_MODEL_SPEC.context_window,
        FALLBACK_MODEL_SPEC.max_output_tokens,
    )


def test_every_environment_variable_is_documented() -> None:
    text = README.read_text(encoding="utf-8")
    for variable in SCHEMA.environment():
        assert f"`{variable}`" in text


def test_every_risky_setting_is_named_among_the_trusted_project_settings() -> None:
    text = README.read_text(encoding="utf-8")
    paragraph = text[text.index("**Trusted projects.**") :].split("\n\n")[0]
    web_search = {"tools.web_search_backend", "tools.web_search_url", "tools.web_search_api_key_env"}
    for key in set(SCHEMA.effects()) - web_search:  # those three: "the web-search endpoint and key"
        assert f"`{key}`" in paragraph
    assert "web-search endpoint and key" in paragraph


# --- a setting added by one declaration ------------------------------------------------------------


@dataclass(frozen=True)
class Hooks:
    enabled: bool = setting(False, boolean)
    commands: tuple[str, ...] = setting((), string_list, risky="these commands run on every turn")


@dataclass(frozen=True)
class Extended:
    """A Settings with two settings the project does not have: each is one declaration and nothing else."""

    retries: int = setting(3, at_least(0), env=("TEST_RETRIES",))
    hooks: Hooks = table(Section(Hooks))


EXTENDED = Schema.of(Extended)


def test_a_declared_setting_is_checked_with_a_precise_error() -> None:
    with pytest.raises(ConfigError) as error:
        EXTENDED.validate("/p/config.toml", {"hooks": {"enabled": "yes"}})
    assert str(error.value) == "/p/config.toml: `hooks.enabled` must be true or false, got 'yes'"
    with pytest.raises(ConfigError, match="Did you mean `hooks.commands`"):
        EXTENDED.validate("/p/config.toml", {"hooks": {"comands": []}})


def test_a_declared_setting_is_merged_built_and_read_from_the_environment() -> None:
    assert EXTENDED.environment() == {"TEST_RETRIES": "retries"}
    first = EXTENDED.validate("a", {"retries": 5, "hooks": {"enabled": True}})
    second = EXTENDED.validate("b", {"hooks": {"commands": ["make lint"]}})
    built = Extended(**EXTENDED.build(EXTENDED.merge(first, second)))
    assert built == Extended(retries=5, hooks=Hooks(enabled=True, commands=("make lint",)))
    assert [f.name for f in fields(Extended)] == ["retries", "hooks"]


def test_a_declared_risky_setting_needs_trust_in_a_project_config() -> None:
    layer = EXTENDED.validate("p", {"hooks": {"enabled": True, "commands": ["rm -rf ~"]}})
    safe, risky = trust.split_layer(layer, EXTENDED)
    assert safe == {"hooks": {"enabled": True}}
    assert risky == {"hooks": {"commands": ("rm -rf ~",)}}
    assert EXTENDED.effects() == {"hooks.commands": "these commands run on every turn"}
    assert trust.split_layer(EXTENDED.validate("p", {"hooks": {"commands": []}}), EXTENDED)[1] == {}
