"""Optional per-model prices turn recorded usage into an estimated cost; without prices no cost is shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.config import ConfigError, ModelPrice, load_settings
from catbuddy.session.usage import SessionUsage


def config(tmp_path: Path, text: str) -> tuple[Path, Path]:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir(parents=True)
    root.mkdir(parents=True)
    (home / "config.toml").write_text(text)
    return home, root


def test_a_price_applies_to_its_model_and_models_it_prefixes(tmp_path: Path) -> None:
    settings = load_settings(*config(tmp_path, '[prices."gpt-4o"]\ninput = 2.5\noutput = 10\n'), env={})
    assert settings.price_for("gpt-4o") == ModelPrice(2.5, 10.0)
    assert settings.price_for("gpt-4o-2024-08-06") == ModelPrice(2.5, 10.0)
    assert settings.price_for("openai/gpt-4o") == ModelPrice(2.5, 10.0)
    assert settings.price_for("claude-sonnet") is None


def test_no_prices_means_no_cost(tmp_path: Path) -> None:
    settings = load_settings(*config(tmp_path, ""), env={})
    usage = SessionUsage().add(1000, 800, 50)
    assert settings.price_for("gpt-4o") is None
    assert usage.cost(None) is None
    assert "cost" not in usage.describe(None)


def test_cached_tokens_are_billed_at_the_cached_price() -> None:
    price = ModelPrice(input=2.0, output=8.0, cached_input=0.5)
    usage = SessionUsage().add(1_000_000, 600_000, 100_000)
    assert usage.cost(price) == pytest.approx(0.4 * 2.0 + 0.6 * 0.5 + 0.1 * 8.0)
    assert "estimated cost $1.9000" in usage.describe(price)


def test_without_a_cached_price_no_discount_is_assumed() -> None:
    usage = SessionUsage().add(1_000_000, 600_000, 0)
    assert usage.cost(ModelPrice(input=2.0, output=8.0)) == pytest.approx(2.0)


def test_a_price_needs_input_and_output(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'prices\."gpt-4o"\.output'):
        load_settings(*config(tmp_path, '[prices."gpt-4o"]\ninput = 2.5\n'), env={})


def test_a_negative_or_unknown_price_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="input"):
        load_settings(*config(tmp_path, '[prices.m]\ninput = -1\noutput = 1\n'), env={})
    with pytest.raises(ConfigError, match="Did you mean"):
        load_settings(*config(tmp_path / "b", '[prices.m]\ninput = 1\noutput = 1\ncached = 0.1\n'), env={})


def test_usage_totals_clamp_a_cached_figure_above_the_prompt() -> None:
    usage = SessionUsage().add(100, 150, 5)
    assert usage.cached_tokens == 100 and usage.hit_rate == 1.0
    assert usage.last_hit_rate == 1.0
