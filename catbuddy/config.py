"""Settings: global config.toml, then the project's, then the environment, then flags (docs/architecture.md §11).

Every layer is validated on its own, so an error names the file (or variable, or flag) it came from,
the key, and what was expected. API keys are held but never shown: ``Settings.redacted()`` is what
gets printed or logged.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from catbuddy import config_schema
from catbuddy.config_schema import ConfigError, validate_layer

DEFAULT_MODEL = "gpt-4o"
DEFAULT_ENCODING = "o200k_base"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
APPROVAL_MODES = config_schema.APPROVAL_MODES
ENCODINGS = config_schema.ENCODINGS

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

# Memory and Dream (docs/architecture.md §13); all overridable under [memory].
DREAM_MODES = config_schema.DREAM_MODES
DREAM_IDLE_MINUTES = 5.0
MEMORY_MAX_LINES = 200
MEMORY_MAX_BYTES = 25 * 1024
DREAM_ENTRY_TOKENS = 24_000
MAX_DREAM_FAILURES = 3


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
class MemorySettings:
    dream: str = "auto"  # "auto" (in the background when idle), "ask" (show the diff first) or "off"
    dream_model: str = ""  # "": the compact model, else the session's model
    dream_idle_minutes: float = DREAM_IDLE_MINUTES
    memory_max_lines: int = MEMORY_MAX_LINES
    memory_max_bytes: int = MEMORY_MAX_BYTES
    dream_entry_tokens: int = DREAM_ENTRY_TOKENS  # entry text one Dream run reads at most
    max_dream_failures: int = MAX_DREAM_FAILURES  # failed runs in a row before auto Dream pauses


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
    memory: MemorySettings = field(default_factory=MemorySettings)
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
        if key in ("context", "tools", "memory", "models", "mcp_servers") and isinstance(value, dict):
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
    for var, key in ENV_VARS.items():
        if env.get(var):
            merged = _merge(merged, validate_layer(f"environment variable {var}", {key: env[var]}))
            if "environment" not in sources:
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
    top.pop("memory", None)
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
        memory=MemorySettings(**merged.get("memory", {})),
        mcp_servers=servers,
    )
