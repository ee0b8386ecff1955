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
from typing import Any, TypeVar

from catbuddy import config_schema, trust
from catbuddy.config_schema import ConfigError, validate_layer
from catbuddy.trust import ProjectTrust

DEFAULT_MODEL = "gpt-4o"
DEFAULT_ENCODING = "o200k_base"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
APPROVAL_MODES = config_schema.APPROVAL_MODES
SANDBOX_MODES = config_schema.SANDBOX_MODES
DEFAULT_SANDBOX = "workspace-write"
ENCODINGS = config_schema.ENCODINGS

# Context governance thresholds from the design; all overridable under [context].
KEEP_RECENT_RESULTS = 10
# Old tool results are stubbed only in batches that save this much: each batch costs one prompt-cache
# miss, so it must shrink every later request enough to pay for it before the next compaction breaks the
# prefix anyway. bench/bench_cache.py, 300 turns at 128k: 6k→×0.61 of sliding's billed input, 8k→×0.55,
# 10k→×0.52, 12k→×0.49 (largest request ×1.13), 16k→×0.46 (largest ×1.20).
MICROCOMPACT_MIN_TOKENS = 12_000
COMPACT_MESSAGE_THRESHOLD = 50
COMPACT_KEEP_RECENT = 25
COMPACT_TOKEN_RATIO = 0.8
SAFETY_MARGIN = 1024
MAX_COMPACT_FAILURES = 3
COMPACT_USER_TOKENS = 2000  # the user's own words carried verbatim in the pinned summary
COMPACT_LEDGER_TOKENS = 1500  # the code-built ledger in the pinned summary
RECALL_MAX_TOKENS = 2000  # one recall result

EXEC_TIMEOUT = 60
EXEC_MAX_TIMEOUT = 600
# Bounds on what one model reply may ask for (a misbehaving model must not freeze or bloat the session).
MAX_CALLS_PER_REPLY = 64
MAX_ARGUMENT_BYTES = 256 * 1024
MAX_RESULT_CHARS = 100_000
MAX_ITERATIONS = 50
REQUEST_TIMEOUT = 600.0  # seconds for a whole answer
CONNECT_TIMEOUT = 10.0  # seconds to open the connection
STREAM_IDLE_TIMEOUT = 60.0  # seconds a stream may stay silent (the wait for its first byte included)
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


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens, from ``[prices."model"]``: turns recorded usage into a cost."""

    input: float
    output: float
    cached_input: float | None = None  # None: the input price (no discount assumed)

    def cost(self, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> float:
        cached_price = self.input if self.cached_input is None else self.cached_input
        fresh = max(0, prompt_tokens - cached_tokens)
        return (fresh * self.input + cached_tokens * cached_price + completion_tokens * self.output) / 1e6


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
    microcompact_min_tokens: int = MICROCOMPACT_MIN_TOKENS
    compact_message_threshold: int = COMPACT_MESSAGE_THRESHOLD
    compact_keep_recent: int = COMPACT_KEEP_RECENT
    compact_token_ratio: float = COMPACT_TOKEN_RATIO
    safety_margin: int = SAFETY_MARGIN
    max_compact_failures: int = MAX_COMPACT_FAILURES
    compact_user_tokens: int = COMPACT_USER_TOKENS
    compact_ledger_tokens: int = COMPACT_LEDGER_TOKENS
    recall_max_tokens: int = RECALL_MAX_TOKENS
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
    max_calls_per_reply: int = MAX_CALLS_PER_REPLY
    max_argument_bytes: int = MAX_ARGUMENT_BYTES
    max_result_chars: int = MAX_RESULT_CHARS


@dataclass(frozen=True)
class SandboxSettings:
    """How `exec` is confined (catbuddy.sandbox) and what environment it gets."""

    mode: str = DEFAULT_SANDBOX  # "workspace-write", "read-only" or "off"
    writable: tuple[str, ...] = ()  # more paths commands may write (absolute or ~)
    network: bool = False
    env_allow: tuple[str, ...] = ()  # variables let through although they look secret (patterns)


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
    request_timeout: float = REQUEST_TIMEOUT
    connect_timeout: float = CONNECT_TIMEOUT
    stream_idle_timeout: float = STREAM_IDLE_TIMEOUT
    max_retries: int = 4
    models: Mapping[str, ModelSpec] = field(default_factory=dict)
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    context: ContextSettings = field(default_factory=ContextSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    mcp_servers: Mapping[str, McpServerSettings] = field(default_factory=dict)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    sources: tuple[str, ...] = ()
    # The project config's settings that need trust, and whether they apply (None: it has none).
    project_trust: ProjectTrust | None = None

    @property
    def model_name(self) -> str:
        """The configured model, or the default used for counting when none is configured."""
        return self.model or DEFAULT_MODEL

    @property
    def model_configured(self) -> bool:
        return bool(self.model)

    def model_spec(self, model: str | None = None) -> ModelSpec:
        return resolve_model_spec(model or self.model_name, self.models)

    def price_for(self, model: str | None = None) -> ModelPrice | None:
        """The configured price of ``model`` (exact name, else longest prefix), or None: no cost shown."""
        return _longest_prefix(model or self.model_name, self.prices)

    def encoding_for(self, model: str | None = None) -> str:
        from catbuddy.model_encodings import encoding_name_for_model

        spec = self.model_spec(model)
        return spec.encoding or encoding_name_for_model(
            model or self.model_name, self.context.default_encoding
        )

    def held_secrets(self, env: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The literal secrets catbuddy holds: the API key, the web-search key, MCP env and header values.
        They are scrubbed from tool results, events and logs, and never reach an exec child."""
        env = os.environ if env is None else env
        values = [self.api_key or ""]
        if self.tools.web_search_api_key_env:
            values.append(env.get(self.tools.web_search_api_key_env, ""))
        for server in self.mcp_servers.values():
            values += list(server.env.values()) + list(server.headers.values())
        return tuple(dict.fromkeys(v for v in values if v))

    def key_variables(self) -> tuple[str, ...]:
        """The environment variables that hold keys catbuddy uses (dropped from exec's environment)."""
        names = [self.api_key_env, self.tools.web_search_api_key_env, DEFAULT_API_KEY_ENV]
        return tuple(dict.fromkeys(n for n in names if n))

    def redacted(self) -> dict[str, Any]:
        """A printable view: the API key is never shown, only whether one is set."""
        data = asdict(self)
        data.pop("project_trust", None)
        data["api_key"] = "<set>" if self.api_key else None
        for server in data["mcp_servers"].values():
            server["env"] = {k: "<hidden>" for k in server["env"]}
            server["headers"] = {k: "<hidden>" for k in server["headers"]}
        return data


def resolve_model_spec(model: str, overrides: Mapping[str, ModelSpec]) -> ModelSpec:
    for table in (overrides, KNOWN_MODELS):
        found = _longest_prefix(model, table)
        if found is not None:
            return found
    return overrides.get("default", FALLBACK_MODEL_SPEC)


_Entry = TypeVar("_Entry")


def _longest_prefix(model: str, table: Mapping[str, _Entry]) -> _Entry | None:
    """``table[model]``, else the entry whose name is the longest prefix of the model's base name."""
    if model in table:
        return table[model]
    base = model.split("/")[-1].lower()  # "openai/gpt-4o" on OpenRouter
    matches = [prefix for prefix in table if prefix != "default" and base.startswith(prefix.lower())]
    return table[max(matches, key=len)] if matches else None


# --- loading --------------------------------------------------------------------------------------

ENV_VARS: dict[str, str] = {
    "CATBUDDY_MODEL": "model",
    "OPENAI_BASE_URL": "base_url",
    "CATBUDDY_BASE_URL": "base_url",
    "CATBUDDY_APPROVAL": "approval",
    "CATBUDDY_COMPACT_MODEL": "compact_model",
    "CATBUDDY_SANDBOX": "sandbox",
}


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), "(file)", "a readable file", hint=exc.strerror or str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data, exc) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), "(file)", "valid TOML", hint=f"{exc}") from None


def _not_utf8(path: Path, data: bytes, exc: UnicodeDecodeError) -> ConfigError:
    """Name the line, and the key on it, where the first byte that is not UTF-8 sits."""
    line_no = data.count(b"\n", 0, exc.start) + 1
    start = data.rfind(b"\n", 0, exc.start) + 1
    end = data.find(b"\n", exc.start)
    line = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
    key, sep, _ = line.partition("=")
    where = key.strip() if sep and key.strip() else f"(line {line_no})"
    byte = data[exc.start : exc.start + 1].hex()
    return ConfigError(
        str(path),
        where,
        "UTF-8 text",
        hint=f"Line {line_no} has the byte 0x{byte}, which is not UTF-8 (TOML files must be UTF-8). "
        "Re-save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`, or retype that value",
    )


ADDITIVE_KEYS = ("deny_patterns",)  # every layer's entries apply: a project cannot remove yours


def _merge(base: dict[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in layer.items():
        if key in ("context", "tools", "memory", "models", "prices", "mcp_servers") and isinstance(value, dict):
            inner = dict(merged.get(key, {}))
            for inner_key, inner_value in value.items():
                if inner_key in ADDITIVE_KEYS and key == "tools":
                    inner_value = tuple(dict.fromkeys([*inner.get(inner_key, ()), *inner_value]))
                inner[inner_key] = inner_value
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
    *,
    trust_project: bool = False,
) -> Settings:
    """Merge the layers in order; later layers win. Each is validated before merging.

    The project file's risky settings (catbuddy.trust) are merged only when the user trusted them (the
    decision in the home matches them) or ``trust_project`` says so; ``Settings.project_trust`` tells."""
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    sources: list[str] = []
    project_trust: ProjectTrust | None = None
    global_file, project_file = config_files(global_home, work_root)
    if global_file.exists():  # a folder or an unreadable file in its place is an error, not "no config"
        merged = _merge(merged, validate_layer(str(global_file), read_toml(global_file)))
        sources.append(str(global_file))
    if project_file.exists():
        layer = validate_layer(str(project_file), read_toml(project_file))
        safe, risky = trust.split_layer(layer)
        if risky:
            project_trust = trust.assess(global_home, work_root, project_file, risky)
            if trust_project and not project_trust.applied:
                project_trust = replace(project_trust, state=trust.TrustState.TRUSTED)
            if not project_trust.applied:
                layer = safe
        merged = _merge(merged, layer)
        sources.append(str(project_file))
    for var, key in ENV_VARS.items():
        if env.get(var):
            merged = _merge(merged, validate_layer(f"environment variable {var}", {key: env[var]}))
            if "environment" not in sources:
                sources.append("environment")
    if flags:
        given = {k: v for k, v in flags.items() if v is not None}
        if given:
            merged = _merge(merged, validate_layer("command-line flags", given))
            sources.append("flags")
    return replace(_build(merged, env, tuple(sources)), project_trust=project_trust)


SANDBOX_KEYS = {"sandbox": "mode", "sandbox_writable": "writable", "sandbox_network": "network",
                "exec_env_allow": "env_allow"}


def _build(merged: dict[str, Any], env: Mapping[str, str], sources: tuple[str, ...]) -> Settings:
    sandbox = SandboxSettings(**{SANDBOX_KEYS[k]: merged.pop(k) for k in list(merged) if k in SANDBOX_KEYS})
    top = {k: v for k, v in merged.items() if k in {f.name for f in fields(Settings)}}
    top.pop("models", None)
    top.pop("prices", None)
    top.pop("context", None)
    top.pop("tools", None)
    top.pop("memory", None)
    top.pop("mcp_servers", None)
    settings = Settings(**top, sources=sources, sandbox=sandbox)
    api_key = settings.api_key or env.get(settings.api_key_env) or None
    default_spec = merged.get("models", {}).pop("default", None) if "models" in merged else None
    models = {name: ModelSpec(**spec) for name, spec in merged.get("models", {}).items()}
    if default_spec:
        models["default"] = replace(FALLBACK_MODEL_SPEC, **default_spec)
    prices = {name: ModelPrice(**spec) for name, spec in merged.get("prices", {}).items()}
    servers = {
        name: McpServerSettings(name=name, **spec) for name, spec in merged.get("mcp_servers", {}).items()
    }
    return replace(
        settings,
        api_key=api_key,
        models=models,
        prices=prices,
        context=ContextSettings(**merged.get("context", {})),
        tools=ToolSettings(**merged.get("tools", {})),
        memory=MemorySettings(**merged.get("memory", {})),
        mcp_servers=servers,
    )
