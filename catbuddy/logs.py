"""Where catbuddy's own log lines go: a file while the app owns the terminal, stderr otherwise.

Nothing catbuddy logs contains an API key (settings print as `<set>`, session events are scrubbed),
so the file is safe to attach to a bug report.
"""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

LOG_FILE = "catbuddy.log"
LOG_MAX_BYTES = 5_000_000
LOG_BACKUPS = 2
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_to_file(home: Path) -> Path | None:
    """The app draws the whole screen, so log lines must never reach the terminal."""
    path = home / "logs" / LOG_FILE
    root = logging.getLogger()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
    except OSError:
        handler, path = logging.NullHandler(), None  # type: ignore[assignment]
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    return path


def log_to_stderr() -> None:
    """Commands print warnings (e.g. a skipped SKILL.md) on stderr, next to their output."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("catbuddy: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
