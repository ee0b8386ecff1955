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
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<user>[^\s:/@]*):(?P<pw>[^\s/@]+)@"
)
# Detection only (``secret_spans``): facts that must never be stored, e.g. in memory. Wider than what
# ``redact_text`` scrubs from output, where a false hit would mangle the user's own content.
_TOKEN_PREFIXES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,}|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+)"
)
_ASSIGNED_SECRET = re.compile(
    r"\b[A-Za-z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY)[A-Za-z0-9_]*"
    r"\s*[=:]\s*['\"]?[^\s'\"]{8,}",
    re.IGNORECASE,
)
_SPOKEN_SECRET = re.compile(
    r"\b(?:password|passwd|passphrase|pwd|pin|api[ _-]?key|secret(?: key)?|access token|auth token|token)\b"
    r"\s*(?:is|was|=|:)\s*['\"`]?(?=[^\s'\"`]*[\d!@#$%^&*_\-+=/])[^\s'\"`]{4,}",
    re.IGNORECASE,
)
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
SECRET_KINDS = (
    (_KEY_PATTERN, "an API key"),
    (_TOKEN_PREFIXES, "an access token"),
    (_BEARER_PATTERN, "a bearer token"),
    (_URL_CREDENTIALS, "a password in a URL"),
    (_PRIVATE_KEY, "a private key"),
    (_ASSIGNED_SECRET, "a secret assigned to a variable"),
    (_SPOKEN_SECRET, "a password or token"),
)
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


def redact(value: Any, secrets: Iterable[str] = (), *, patterns: bool = True) -> Any:
    """A copy of ``value`` (strings, mappings, lists) with secrets masked; values under keys named like
    secrets (``api_key``, ``Authorization``, …) are masked whole. ``patterns``: as for ``redact_text``."""
    known = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, known, patterns=patterns)
    if isinstance(value, Mapping):
        return {
            key: MASK
            if str(key).lower() in SECRET_KEYS and value[key]
            else redact(value[key], known, patterns=patterns)
            for key in value
        }
    if isinstance(value, list | tuple):
        return [redact(item, known, patterns=patterns) for item in value]
    return value


def redact_url(url: str) -> str:
    """A URL (or any text holding URLs) fit to show: passwords in ``scheme://user:password@`` masked."""
    return _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", url)


def secret_spans(text: str, secrets: Iterable[str] = ()) -> list[tuple[int, int, str]]:
    """Where ``text`` holds something that must never be stored: the literal keys catbuddy holds, and
    anything shaped like a key, a token or a password. ``(start, end, what)`` per hit, in order."""
    spans: list[tuple[int, int, str]] = []
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_CHARS:
            start = text.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret), "the configured API key"))
                start = text.find(secret, start + 1)
    for pattern, what in SECRET_KINDS:
        spans += [(m.start(), m.end(), what) for m in pattern.finditer(text)]
    return sorted(spans)


def find_secret(text: str, secrets: Iterable[str] = ()) -> str | None:
    """What kind of secret ``text`` holds (e.g. "an API key"), or None."""
    spans = secret_spans(text, secrets)
    return spans[0][2] if spans else None


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every span ``secret_spans`` finds replaced by ``REDACTED``."""
    out, position = [], 0
    for start, end, _ in secret_spans(text, secrets):
        if start >= position:
            out.append(text[position:start] + REDACTED)
            position = end
        elif end > position:
            position = end
    return "".join(out) + text[position:]
