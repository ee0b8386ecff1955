"""The one secret scrubber: API keys, bearer tokens, URL passwords and the literal keys catbuddy holds.

Used on everything that leaves catbuddy's hands for a person or a file other than the conversation
itself: error messages, event records, log lines (docs/architecture.md §9). What counts as "looks
like a key" is decided here once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "<redacted>"  # a literal secret catbuddy knows
MASK = "***"  # the secret part of something that looks like one
MIN_SECRET_CHARS = 6  # shorter configured values are not scrubbed: they would hit ordinary words
# The three patterns: OpenAI-style keys, bearer tokens, and credentials inside URLs.
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
_BEARER_PATTERN = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/\-]{8,}=*", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<user>[^\s:/@]*):(?P<pw>[^\s/@]+)@")
SECRET_KEYS = frozenset(
    {"api_key", "apikey", "api-key", "x-api-key", "authorization", "password", "secret", "token"}
)


def redact_text(text: str, secrets: Iterable[str] = (), *, patterns: bool = True) -> str:
    """``text`` with known secret values masked and, with ``patterns``, anything that looks like a key,
    a bearer token or a URL password. Tool results use ``patterns=False``: a file that merely contains
    something key-shaped is the user's content, but the keys catbuddy itself holds never reach the model."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    if not patterns:
        return text
    text = _KEY_PATTERN.sub(f"sk-{MASK}", text)
    text = _BEARER_PATTERN.sub(f"Bearer {MASK}", text)
    return redact_url(text)


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``value`` (strings, mappings, lists) with secrets masked; values under keys named like
    secrets (``api_key``, ``Authorization``, …) are masked whole."""
    known = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, Mapping):
        return {
            key: MASK if str(key).lower() in SECRET_KEYS and value[key] else redact(value[key], known)
            for key in value
        }
    if isinstance(value, list | tuple):
        return [redact(item, known) for item in value]
    return value


def redact_url(url: str) -> str:
    """A URL (or any text holding URLs) fit to show: passwords in ``scheme://user:password@`` masked."""
    return _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", url)
