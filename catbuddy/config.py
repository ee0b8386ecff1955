"""Settings: global config.toml, then the project's, then the environment, then flags (DESIGN §9).

Every layer is validated on its own, so an error names the file (or variable, or flag) it came from,
the key, and what was expected. API keys are held but never shown: ``Settings.redacted()`` is what
gets printed or logged.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "gpt-4o"
DEFAULT_ENCODING = "o200k_base"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
APPROVAL_MODES = ("ask", "auto-edit", "yolo")
ENCODINGS = ("o200k_base", "cl100k_base")

# Context governance thresholds from the design; all overridable under [context].
KEEP_RECENT_RESULTS = 10
COMPACT_MESSAGE_THRESHOLD = 50
COMPACT_KEEP_RECENT = 25
COMPACT_TOKEN_RATIO = 0.8
SAFETY_MARGIN = 1024
MAX_COMPACT_FAILURES = 3

EXEC_TIMEOUT = 60
EXEC_MAX_TIMEOUT = 600
MAX_ITERATIONS = 50
MCP_STARTUP_TIMEOUT = 10.0
MCP_CALL_TIMEOUT = 60.0


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


@dataclass(frozen=True)
class ModelSpec:
    """What catbuddy needs to know about a model to keep its requests inside the window."""

    context_window: int
    max_output_tokens: int
    encoding: str | None = None  # None: chosen from the model name


# Sensible defaults for common models, matched by longest prefix of the model name.
KNOWN_MODELS: dict[str, ModelSpec] = {
    "gpt-5": ModelSpec(400_000, 128_000),
    "gpt-4.1": ModelSpec(1_047_576, 32_768),
    "gpt-4.5": ModelSpec(128_000, 16_384),
    "gpt-4o": ModelSpec(128_000, 16_384),
    "gpt-4-turbo": ModelSpec(128_000, 4_096),
    "gpt-4-32k": ModelSpec(32_768, 4_096),
    "gpt-4": ModelSpec(8_192, 4_096),
    "gpt-3.5-turbo": ModelSpec(16_385, 4_096),
    "o1": ModelSpec(200_000, 100_000),
    "o3": ModelSpec(200_000, 100_000),
    "o4-mini": ModelSpec(200_000, 100_000),
    "deepseek": ModelSpec(128_000, 8_192),
    "claude": ModelSpec(200_000, 8_192),
    "qwen": ModelSpec(32_768, 8_192),
    "llama": ModelSpec(8_192, 2_048),
    "mistral": ModelSpec(32_768, 4_096),
}
FALLBACK_MODEL_SPEC = ModelSpec(32_768, 4_096)


@dataclass(frozen=True)
class ContextSettings:
    keep_recent_results: int = KEEP_RECENT_RESULTS
    compact_message_threshold: int = COMPACT_MESSAGE_THRESHOLD
    compact_keep_recent: int = COMPACT_KEEP_RECENT
    compact_token_ratio: float = COMPACT_TOKEN_RATIO
    safety_margin: int = SAFETY_MARGIN
    max_compact_failures: int = MAX_COMPACT_FAILURES
    auto_compact: bool = True
    global_user_profile: bool = False
    default_encoding: str = DEFAULT_ENCODING


@dataclass(frozen=True)
class ToolSettings:
    exec_timeout: int = EXEC_TIMEOUT
    exec_max_timeout: int = EXEC_MAX_TIMEOUT
    allow_outside_work_root: bool = False
    allow_private_network: bool = False
    web_search_backend: str = ""  # "brave", "tavily", "searxng" or "" for none
    web_search_url: str = ""
    web_search_api_key_env: str = ""
    deny_patterns: tuple[str, ...] = ()
    allow_commands: tuple[str, ...] = ()


@dataclass(frozen=True)
class McpServerSettings:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    approval: str = "ask"  # "ask", "auto" (never asks) or "deny"
    tool_approval: Mapping[str, str] = field(default_factory=dict)
    startup_timeout: float = MCP_STARTUP_TIMEOUT
    call_timeout: float = MCP_CALL_TIMEOUT
    disabled: bool = False


@dataclass(frozen=True)
class Settings:
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    api_key: str | None = field(default=None, repr=False)
    compact_model: str | None = None
    approval: str = "ask"
    max_iterations: int = MAX_ITERATIONS
    request_timeout: float = 600.0
    max_retries: int = 4
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    context: ContextSettings = field(default_factory=ContextSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    mcp_servers: Mapping[str, McpServerSettings] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    @property
    def model_name(self) -> str:
        """The configured model, or the default used for counting when none is configured."""
        return self.model or DEFAULT_MODEL

    @property
    def model_configured(self) -> bool:
        return bool(self.model)

    def model_spec(self, model: str | None = None) -> ModelSpec:
        return resolve_model_spec(model or self.model_name, self.models)

    def encoding_for(self, model: str | None = None) -> str:
        from catbuddy.context.tokens import encoding_name_for_model

        spec = self.model_spec(model)
        return spec.encoding or encoding_name_for_model(
            model or self.model_name, self.context.default_encoding
        )

    def redacted(self) -> dict[str, Any]:
        """A printable view: the API key is never shown, only whether one is set."""
        data = asdict(self)
        data["api_key"] = "<set>" if self.api_key else None
        for server in data["mcp_servers"].values():
            server["env"] = {k: "<hidden>" for k in server["env"]}
            server["headers"] = {k: "<hidden>" for k in server["headers"]}
        return data


def resolve_model_spec(model: str, overrides: Mapping[str, ModelSpec]) -> ModelSpec:
    if model in overrides:
        return overrides[model]
    base = model.split("/")[-1].lower()  # "openai/gpt-4o" on OpenRouter
    for table in (overrides, KNOWN_MODELS):
        matches = [prefix for prefix in table if base.startswith(prefix.lower())]
        if matches:
            return table[max(matches, key=len)]
    return overrides.get("default", FALLBACK_MODEL_SPEC)


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
    "max_retries": _int(0),
}
CONTEXT_KEYS: dict[str, Validator] = {
    "keep_recent_results": _int(0),
    "compact_message_threshold": _int(2),
    "compact_keep_recent": _int(1),
    "compact_token_ratio": _number(0.05, 1.0),
    "safety_margin": _int(0),
    "max_compact_failures": _int(1),
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
    "deny_patterns": _str_list,
    "allow_commands": _str_list,
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
        elif key == "models":
            if not isinstance(value, dict):
                raise ConfigError(source, "models", 'a table of models, e.g. [models."gpt-4o"]', value)
            layer["models"] = {name: _check_model(source, name, spec) for name, spec in value.items()}
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


# --- loading --------------------------------------------------------------------------------------

ENV_VARS: dict[str, str] = {
    "CATBUDDY_MODEL": "model",
    "OPENAI_BASE_URL": "base_url",
    "CATBUDDY_BASE_URL": "base_url",
    "CATBUDDY_APPROVAL": "approval",
    "CATBUDDY_COMPACT_MODEL": "compact_model",
}


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "(file)", "valid TOML", hint=f"{exc}") from None
    except OSError as exc:
        raise ConfigError(str(path), "(file)", "a readable file", hint=str(exc)) from None


def _merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in layer.items():
        if key in ("context", "tools", "models", "mcp_servers") and isinstance(value, dict):
            inner = dict(merged.get(key, {}))
            inner.update(value)
            merged[key] = inner
        else:
            merged[key] = value
    return merged


def config_files(global_home: Path, work_root: Path) -> list[Path]:
    return [global_home / "config.toml", work_root / ".catbuddy" / "config.toml"]


def load_settings(
    global_home: Path,
    work_root: Path,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the layers in order; later layers win. Each is validated before merging."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    sources: list[str] = []
    for path in config_files(global_home, work_root):
        if path.is_file():
            merged = _merge(merged, validate_layer(str(path), read_toml(path)))
            sources.append(str(path))
    env_layer = {key: env[var] for var, key in ENV_VARS.items() if env.get(var)}
    if env_layer:
        merged = _merge(merged, validate_layer("environment", env_layer))
        sources.append("environment")
    if flags:
        given = {k: v for k, v in flags.items() if v is not None}
        merged = _merge(merged, validate_layer("command-line flags", given))
        sources.append("flags")
    return _build(merged, env, tuple(sources))


def _build(merged: dict[str, Any], env: Mapping[str, str], sources: tuple[str, ...]) -> Settings:
    top = {k: v for k, v in merged.items() if k in {f.name for f in fields(Settings)}}
    top.pop("models", None)
    top.pop("context", None)
    top.pop("tools", None)
    top.pop("mcp_servers", None)
    settings = Settings(**top, sources=sources)
    api_key = settings.api_key or env.get(settings.api_key_env) or None
    default_spec = merged.get("models", {}).pop("default", None) if "models" in merged else None
    models = {name: ModelSpec(**spec) for name, spec in merged.get("models", {}).items()}
    if default_spec:
        models["default"] = replace(FALLBACK_MODEL_SPEC, **default_spec)
    servers = {
        name: McpServerSettings(name=name, **spec) for name, spec in merged.get("mcp_servers", {}).items()
    }
    return replace(
        settings,
        api_key=api_key,
        models=models,
        context=ContextSettings(**merged.get("context", {})),
        tools=ToolSettings(**merged.get("tools", {})),
        mcp_servers=servers,
    )
