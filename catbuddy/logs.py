"""Where catbuddy's own log lines go: a file while the app owns the terminal, stderr otherwise.

Every handler carries ``RedactingFilter``: a line is scrubbed by ``catbuddy.redact`` (the literal keys
catbuddy holds, `sk-…` keys, bearer tokens, URL passwords) before it is written, whoever logged it, so
the file is safe to attach to a bug report.
"""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Iterable
from pathlib import Path

from catbuddy.redact import redact_text

LOG_FILE = "catbuddy.log"
LOG_MAX_BYTES = 5_000_000
LOG_BACKUPS = 2
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RedactingFilter(logging.Filter):
    """Scrubs the formatted message (arguments included) and any traceback text of a record."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: tuple[str, ...] = tuple(secrets)

    def add_secrets(self, secrets: Iterable[str]) -> None:
        self.secrets = tuple(dict.fromkeys([*self.secrets, *(s for s in secrets if s)]))

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: log what there is, scrubbed
            message = str(record.msg)
        record.msg, record.args = redact_text(message, self.secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info, self.secrets)
        return True


REDACTION = RedactingFilter()  # shared by every handler catbuddy installs


def add_log_secrets(secrets: Iterable[str]) -> None:
    """Literal values (the API key, …) to scrub from every later log line."""
    REDACTION.add_secrets(secrets)


def _install(handler: logging.Handler, level: int) -> None:
    handler.addFilter(REDACTION)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _file_handler(home: Path) -> tuple[logging.Handler, Path | None]:
    path = home / "logs" / LOG_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
    except OSError:
        return logging.NullHandler(), None
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    return handler, path


def log_to_file(home: Path, secrets: Iterable[str] = ()) -> Path | None:
    """The app draws the whole screen, so log lines must never reach the terminal."""
    add_log_secrets(secrets)
    handler, path = _file_handler(home)
    _install(handler, logging.INFO)
    return path


def also_log_to_file(home: Path, secrets: Iterable[str] = ()) -> Path | None:
    """Headless commands that call the model: INFO and up (retries, connection failures) also go to the
    log file; stderr keeps showing warnings only, next to the command's own output."""
    add_log_secrets(secrets)
    root = logging.getLogger()
    target = str(home / "logs" / LOG_FILE)
    if any(getattr(h, "baseFilename", None) == target for h in root.handlers):
        return Path(target)
    handler, path = _file_handler(home)
    handler.addFilter(REDACTION)
    for existing in root.handlers:
        if existing.level == logging.NOTSET:
            existing.setLevel(root.level)  # what it showed before, no more
    root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    return path


def log_to_stderr(secrets: Iterable[str] = ()) -> None:
    """Commands print warnings (e.g. a skipped SKILL.md) on stderr, next to their output."""
    add_log_secrets(secrets)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("catbuddy: %(levelname)s: %(message)s"))
    _install(handler, logging.WARNING)
