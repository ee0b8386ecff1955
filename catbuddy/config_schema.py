"""Validation of one configuration layer: every key known, every value of the expected type.

Errors name the source (file, "environment" or "command-line flags"), the key and what was expected.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

APPROVAL_MODES = ("ask", "auto-edit", "yolo")
SANDBOX_MODES = ("workspace-write", "read-only", "off")
ENCODINGS = ("o200k_base", "cl100k_base")
DREAM_MODES = ("auto", "ask", "off")


class ConfigError(Exception):
    """A configuration value is wrong. The message names the source, the key and what was expected."""

    def __init__(self, source: str, key: str, expected: str, got: Any = None, hint: str = "") -> None:
        shown = "" if got is None else f", got {_show(key, got)}"
        text = f"{source}: `{key}` must be {expected}{shown}"
        if hint:
            text += f". {hint}"
        super().__init__(text)
        self.source = source
        self.key = key


def _show(key: str, value: Any) -> str:
    if "key" in key.lower() and "env" not in key.lower():
        return "<hidden>"
    return repr(value)


# --- validation -----------------------------------------------------------------------------------

Validator = Callable[[str, str, Any], Any]


def _int(minimum: int = 0) -> Validator:
    def check(source: str, key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(source, key, f"an integer ≥ {minimum}", value)
        return value

    return check


def _number(low: float, high: float) -> Validator:
    def check(source: str, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ConfigError(source, key, f"a number between {low} and {high}", value)
        return float(value)

    return check


def _bool(source: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(source, key, "true or false", value)
    return value


def _str(source: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(source, key, "a string", value)
    return value


def _choice(*choices: str) -> Validator:
    def check(source: str, key: str, value: Any) -> str:
        if value not in choices:
            raise ConfigError(source, key, "one of " + ", ".join(f'"{c}"' for c in choices), value)
        return str(value)

    return check


def _str_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(source, key, "a list of strings", value)
    return tuple(value)


def _path_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    paths = _str_list(source, key, value)
    for path in paths:
        if not (path.startswith("/") or path.startswith("~")):
            raise ConfigError(source, key, "a list of absolute paths (or paths starting with ~)", path)
    return paths


def _regex_list(source: str, key: str, value: Any) -> tuple[str, ...]:
    patterns = _str_list(source, key, value)
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


def _str_table(source: str, key: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(source, key, "a table of string values", value)
    return dict(value)


TOP_LEVEL: dict[str, Validator] = {
    "model": _str,
    "base_url": _str,
    "api_key_env": _str,
    "api_key": _str,
    "compact_model": _str,
    "approval": _choice(*APPROVAL_MODES),
    "max_iterations": _int(1),
    "request_timeout": _number(1, 3600),
    "connect_timeout": _number(0.1, 600),
    "stream_idle_timeout": _number(0.1, 3600),
    "max_retries": _int(0),
    "sandbox": _choice(*SANDBOX_MODES),
    "sandbox_writable": _path_list,
    "sandbox_network": _bool,
    "exec_env_allow": _str_list,
}
CONTEXT_KEYS: dict[str, Validator] = {
    "keep_recent_results": _int(0),
    "microcompact_min_tokens": _int(0),
    "compact_message_threshold": _int(2),
    "compact_keep_recent": _int(1),
    "compact_token_ratio": _number(0.05, 1.0),
    "safety_margin": _int(0),
    "max_compact_failures": _int(1),
    "compact_user_tokens": _int(0),
    "compact_ledger_tokens": _int(100),
    "recall_max_tokens": _int(200),
    "auto_compact": _bool,
    "global_user_profile": _bool,
    "default_encoding": _choice(*ENCODINGS),
}
TOOLS_KEYS: dict[str, Validator] = {
    "exec_timeout": _int(1),
    "exec_max_timeout": _int(1),
    "allow_outside_work_root": _bool,
    "allow_private_network": _bool,
    "web_search_backend": _choice("", "brave", "tavily", "searxng"),
    "web_search_url": _str,
    "web_search_api_key_env": _str,
    "deny_patterns": _regex_list,
    "allow_commands": _str_list,
    "max_calls_per_reply": _int(1),
    "max_argument_bytes": _int(1024),
    "max_result_chars": _int(1000),
}
MEMORY_KEYS: dict[str, Validator] = {
    "dream": _choice(*DREAM_MODES),
    "dream_model": _str,
    "dream_idle_minutes": _number(0, 1440),
    "memory_max_lines": _int(10),
    "memory_max_bytes": _int(1024),
    "dream_entry_tokens": _int(500),
    "max_dream_failures": _int(1),
}
PRICE_KEYS: dict[str, Validator] = {  # US dollars per million tokens
    "input": _number(0, 1_000_000),
    "cached_input": _number(0, 1_000_000),
    "output": _number(0, 1_000_000),
}
MODEL_KEYS: dict[str, Validator] = {
    "context_window": _int(256),
    "max_output_tokens": _int(1),
    "encoding": _choice(*ENCODINGS),
}


def _approval_table(source: str, key: str, value: Any) -> dict[str, str]:
    table = _str_table(source, key, value)
    for tool, mode in table.items():
        if mode not in ("ask", "auto", "deny"):
            raise ConfigError(source, f"{key}.{tool}", 'one of "ask", "auto", "deny"', mode)
    return table


MCP_KEYS: dict[str, Validator] = {
    "command": _str,
    "args": _str_list,
    "env": _str_table,
    "cwd": _str,
    "url": _str,
    "headers": _str_table,
    "approval": _choice("ask", "auto", "deny"),
    "tool_approval": _approval_table,
    "startup_timeout": _number(0.1, 600),
    "call_timeout": _number(0.1, 3600),
    "disabled": _bool,
    "type": _choice("stdio", "http", "streamable-http", "streamable_http"),
}


def _check_table(source: str, prefix: str, table: Any, schema: Mapping[str, Validator]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(source, prefix.rstrip("."), "a table", table)
    out: dict[str, Any] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if key not in schema:
            close = difflib.get_close_matches(key, list(schema), n=1)
            hint = f"Did you mean `{prefix}{close[0]}`?" if close else "Remove it or check the README."
            raise ConfigError(source, full, "a known setting", hint=f"Unknown key. {hint}")
        out[key] = schema[key](source, full, value)
    return out


def validate_layer(source: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Check one layer (a parsed TOML file, or env/flag values) and return it normalised."""
    layer: dict[str, Any] = {}
    for key, value in data.items():
        if key == "context":
            layer["context"] = _check_table(source, "context.", value, CONTEXT_KEYS)
        elif key == "tools":
            layer["tools"] = _check_table(source, "tools.", value, TOOLS_KEYS)
        elif key == "memory":
            layer["memory"] = _check_table(source, "memory.", value, MEMORY_KEYS)
        elif key == "models":
            if not isinstance(value, dict):
                raise ConfigError(source, "models", 'a table of models, e.g. [models."gpt-4o"]', value)
            layer["models"] = {name: _check_model(source, name, spec) for name, spec in value.items()}
        elif key == "prices":
            if not isinstance(value, dict):
                raise ConfigError(source, "prices", 'a table of model prices, e.g. [prices."gpt-4o"]', value)
            layer["prices"] = {name: _check_price(source, name, spec) for name, spec in value.items()}
        elif key in ("mcpServers", "mcp_servers"):
            if not isinstance(value, dict):
                raise ConfigError(source, key, "a table of servers, e.g. [mcpServers.time]", value)
            layer["mcp_servers"] = {name: _check_mcp(source, key, name, spec) for name, spec in value.items()}
        else:
            layer.update(_check_table(source, "", {key: value}, TOP_LEVEL))
    return layer


def _check_model(source: str, name: str, spec: Any) -> dict[str, Any]:
    checked = _check_table(source, f'models."{name}".', spec, MODEL_KEYS)
    for required in ("context_window", "max_output_tokens"):
        if required not in checked and name != "default":
            raise ConfigError(
                source, f'models."{name}".{required}', "set (an integer)", hint="Both numbers are needed"
            )
    window, out = checked.get("context_window"), checked.get("max_output_tokens")
    if window is not None and out is not None and out >= window:
        raise ConfigError(
            source, f'models."{name}".max_output_tokens', f"smaller than context_window ({window})", out
        )
    return checked


def _check_price(source: str, name: str, spec: Any) -> dict[str, Any]:
    checked = _check_table(source, f'prices."{name}".', spec, PRICE_KEYS)
    for required in ("input", "output"):
        if required not in checked:
            raise ConfigError(
                source,
                f'prices."{name}".{required}',
                "set (US dollars per million tokens)",
                hint="input and output are both needed; cached_input defaults to input (no discount assumed)",
            )
    return checked


def _check_mcp(source: str, table: str, name: str, spec: Any) -> dict[str, Any]:
    checked = _check_table(source, f"{table}.{name}.", spec, MCP_KEYS)
    checked.pop("type", None)
    if not checked.get("command") and not checked.get("url"):
        raise ConfigError(
            source, f"{table}.{name}", "a server with `command` (stdio) or `url` (streamable HTTP)"
        )
    if checked.get("command") and checked.get("url"):
        raise ConfigError(source, f"{table}.{name}", "either `command` or `url`, not both")
    return checked
