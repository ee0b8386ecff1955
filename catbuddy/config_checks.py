"""The checks a setting's value goes through, and the error a failed check raises (docs/architecture.md §11).

A check takes ``(source, key, value)``, returns the value normalised (lists become tuples, numbers floats
where a float is expected) or raises a ``ConfigError`` that names the source (file, "environment variable
X" or "command-line flags"), the key and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from catbuddy.errors import EXIT_USAGE, CatbuddyError

APPROVAL_MODES = ("ask", "auto-edit", "yolo")
SANDBOX_MODES = ("workspace-write", "read-only", "off")
ENCODINGS = ("o200k_base", "cl100k_base")
DREAM_MODES = ("auto", "ask", "off")
PROVIDERS = ("openai", "anthropic")  # openai: any OpenAI-compatible endpoint
SEND_REASONING = (
    "auto",
    "echo",
    "reasoning_content",
    "reasoning_details",
    "none",
)  # catbuddy/llm/reasoning_policy.py
EFFORTS = ("", "none", "minimal", "low", "medium", "high", "xhigh")  # reasoning_effort values
SERVER_APPROVALS = ("ask", "auto", "deny")

Check = Callable[[str, str, Any], Any]


class ConfigError(CatbuddyError, ValueError):
    """A configuration value is wrong. The message names the source, the key and what was expected."""

    exit_code = EXIT_USAGE

    def __init__(self, source: str, key: str, expected: str, got: Any = None, hint: str = "") -> None:
        shown = "" if got is None else f", got {_show(key, got)}"
        super().__init__(f"{source}: `{key}` must be {expected}{shown}", hint)
        self.source = source
        self.key = key


def _show(key: str, value: Any) -> str:
    if "key" in key.lower() and "env" not in key.lower():
        return "<hidden>"
    return repr(value)


def at_least(minimum: int) -> Check:
    def check(source: str, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(source, key, f"an integer ≥ {minimum}", value)
        return value

    return check


def between(low: float, high: float) -> Check:
    def check(source: str, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ConfigError(source, key, f"a number between {low} and {high}", value)
        return float(value)

    return check


def boolean(source: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, key, "true or false", value)
    return value


def string(source: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(source, key, "a string", value)
    return value


def one_of(*choices: str) -> Check:
    def check(source: str, key: str, value: Any) -> str:
        if value not in choices:
            raise ConfigError(source, key, "one of " + ", ".join(f'"{c}"' for c in choices), value)
        return str(value)

    return check


def string_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(source, key, "a list of strings", value)
    return tuple(value)


def path_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    paths = string_list(source, key, value)
    for path in paths:
        if not (path.startswith("/") or path.startswith("~")):
            raise ConfigError(source, key, "a list of absolute paths (or paths starting with ~)", path)
    return paths


def regex_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    patterns = string_list(source, key, value)
    for index, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                source,
                f"{key}[{index}]",
                "a valid regular expression",
                pattern,
                hint=f"{exc}. Escape characters that are special in regexes with a backslash "
                "(e.g. \\( or \\*), or remove the pattern",
            ) from None
    return patterns


def string_table(source: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(source, key, "a table of string values", value)
    return dict(value)


def approval_table(source: str, key: str, value: Any) -> dict[str, str]:
    """``{tool = "ask" | "auto" | "deny"}``: an MCP server's approval per tool."""
    table = string_table(source, key, value)
    for tool, mode in table.items():
        if mode not in SERVER_APPROVALS:
            raise ConfigError(
                source, f"{key}.{tool}", "one of " + ", ".join(f'"{c}"' for c in SERVER_APPROVALS), mode
            )
    return table
