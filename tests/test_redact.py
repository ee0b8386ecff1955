"""The one secret scrubber."""

from __future__ import annotations

import json

from catbuddy.redact import REDACTED, redact, redact_text, redact_url


def test_scrub_replaces_api_keys_and_bearer_tokens_anywhere_in_nested_data() -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    data = {
        "message": f"401 Unauthorized: invalid key {key}",
        "request": {"headers": {"Authorization": "Bearer abcdefghijklmnop.qrs"}, "api_key": "anything"},
        "trace": [f"Bearer {key}", "sk-short"],
        "tokens": 42,
    }
    scrubbed = redact(data)
    text = json.dumps(scrubbed)
    assert key not in text and "abcdefghijklmnop" not in text and "anything" not in text
    assert scrubbed["tokens"] == 42
    assert scrubbed["trace"][1] == "sk-short"  # too short to be a key: left alone
    assert "invalid key sk-***" in scrubbed["message"]


def test_a_known_secret_is_replaced_wherever_it_appears() -> None:
    assert redact_text("key=abc123xyz!", ("abc123xyz",)) == f"key={REDACTED}!"


def test_short_configured_values_are_not_scrubbed_from_ordinary_words() -> None:
    assert redact_text("a cat sat", ("cat",)) == "a cat sat"


def test_url_passwords_are_masked_and_the_user_kept() -> None:
    assert redact_url("http://bob:hunter2@proxy.local:8080/v1") == "http://bob:***@proxy.local:8080/v1"
    assert "hunter2" not in redact_text("cannot reach https://u:hunter2@x.io/v1 (refused)")


def test_tool_results_lose_only_the_literal_keys() -> None:
    text = "token sk-abcdefghijklmnopqrstuv and mine: my-secret-value"
    out = redact_text(text, ("my-secret-value",), patterns=False)
    assert "sk-abcdefghijklmnopqrstuv" in out and "my-secret-value" not in out
