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


def test_secret_detection_finds_keys_tokens_and_passwords_but_not_talk_about_them() -> None:
    from catbuddy.redact import find_secret, mask_secrets

    found = {
        "OPENAI key sk-proj-" + "A1b2C3d4E5f6G7h8I9j0": "an API key",
        "token ghp_" + "a" * 30: "an access token",
        "postgres://app:s3cret@db/app": "a password in a URL",
        "AWS_SECRET_ACCESS_KEY=abcd1234efgh5678": "a secret assigned to a variable",
        "the staging password is hunter2": "a password or token",
        "-----BEGIN RSA PRIVATE KEY-----": "a private key",
    }
    for text, what in found.items():
        assert find_secret(text) == what, text
        assert "<redacted>" in mask_secrets(text)
    for harmless in (
        "The API key is read from OPENAI_API_KEY",
        "a password is required for staging",
        "uses pnpm",
    ):
        assert find_secret(harmless) is None, harmless
    assert find_secret("key: value-of-my-own-key", ("value-of-my-own-key",)) == "the configured API key"
    assert mask_secrets("a hunter2 b", ()) == "a hunter2 b"
