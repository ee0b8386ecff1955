"""Log lines are scrubbed before they are written, whoever logs them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from catbuddy.logs import REDACTION, add_log_secrets, log_to_file, log_to_stderr


@pytest.fixture(autouse=True)
def restore_logging():
    root = logging.getLogger()
    handlers, level, secrets = root.handlers[:], root.level, REDACTION.secrets
    yield
    root.handlers[:], REDACTION.secrets = handlers, secrets
    root.setLevel(level)


def test_the_log_file_never_holds_a_key_or_a_url_password(tmp_path: Path) -> None:
    path = log_to_file(tmp_path, secrets=("literal-key-123456",))
    log = logging.getLogger("catbuddy.somewhere")
    log.warning("request to %s failed", "https://bob:hunter2@proxy.example/v1")
    log.warning("key literal-key-123456 and sk-abcdefghijklmnopqrstuvwx and Bearer abcdefghijkl")
    try:
        raise RuntimeError("boom with literal-key-123456")
    except RuntimeError:
        log.exception("failed")
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert path is not None
    text = path.read_text()
    for secret in ("hunter2", "literal-key-123456", "sk-abcdefghijklmnopqrstuvwx", "abcdefghijkl"):
        assert secret not in text
    assert "bob:***@" in text and "boom with <redacted>" in text


def test_stderr_lines_are_scrubbed_too(capsys: pytest.CaptureFixture[str]) -> None:
    log_to_stderr()
    add_log_secrets(["added-later-secret"])
    logging.getLogger("catbuddy.x").warning("oops added-later-secret at http://u:pw123456@h/")
    err = capsys.readouterr().err
    assert "added-later-secret" not in err and "pw123456" not in err
