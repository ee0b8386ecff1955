"""Settings: global config.toml, then the project's, then the environment, then flags (docs/architecture.md §11).

Every setting is declared once, as a field of the frozen dataclasses below: its default, its check, and
(keyword arguments of ``setting``) its name in config.toml when it differs, what it would let a project
config do (then it needs the user's trust, catbuddy.trust), the environment variables that set it.
``SCHEMA`` reads the declarations; validation, merging, trust and building all come from it. README.md's
configuration block documents every setting with its default (tests/config/test_config_declarations.py).

Every layer is validated on its own, so an error names the file (or variable, or flag) it came from,
the key, and what was expected. API keys are held but never shown: ``Settings.redacted()`` is what
gets printed or logged.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from catbuddy import trust
from catbuddy.config_checks import (
    APPROVAL_MODES,
    DREAM_MODES,
    EFFORTS,
    ENCODINGS,
    PROVIDERS,
    SANDBOX_MODES,
    SEND_REASONING,
    SERVER_APPROVALS,
    ConfigError,
    approval_table,
    at_least,
    between,
    boolean,
    choice_list,
    one_of,
    path_list,
    regex_list,
    string,
    string_list,
    string_table,
)
from catbuddy.config_schema import Entries, Schema, Section, TopLevel, required, setting, table
from catbuddy.trust import ProjectTrust

EDIT_TOOLS = ("edit_file", "apply_patch")
DEFAULT_MODEL = "gpt-4o"  # counted with when no model is configured
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_MAX_OUTPUT_TOKENS = 4_096  # a model entry that gives only its window
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"
ANTHROPIC_BASE_URL_ENV = "ANTHROPIC_BASE_URL"  # read for provider = "anthropic" when base_url is not set


@dataclass(frozen=True)
class ModelSpec:
    """What catbuddy needs to know about a model to keep its requests inside the window."""

    context_window: int = required(at_least(256))
    # None: DEFAULT_MAX_OUTPUT_TOKENS, at most a quarter of the window (a window alone is enough to say)
    max_output_tokens: int = setting(None, at_least(1))
    encoding: str | None = setting(None, one_of(*ENCODINGS))  # None: chosen from the model name
    # The file-editing tools offered to this model; None: by its family (catbuddy.tools.offer).
    edit_tools: tuple[str, ...] | None = setting(None, choice_list(*EDIT_TOOLS))
    vision: bool | None = setting(None, boolean)  # accepts images; None: guessed from the name (images.py)

    def __post_init__(self) -> None:
        if self.max_output_tokens is None:
            default = min(DEFAULT_MAX_OUTPUT_TOKENS, max(1, self.context_window // 4))
            object.__setattr__(self, "max_output_tokens", default)


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens, from ``[prices."model"]``: turns recorded usage into a cost."""

    input: float = required(between(0, 1_000_000))
    output: float = required(between(0, 1_000_000))
    cached_input: float | None = setting(None, between(0, 1_000_000))  # None: the input price (no discount)
    cache_write: float | None = setting(None, between(0, 1_000_000))  # None: the input price (Claude: 1.25×)

    def cost(
        self, prompt_tokens: int, cached_tokens: int, completion_tokens: int, cache_write_tokens: int = 0
    ) -> float:
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input if self.cache_write is None else self.cache_write
        fresh = max(0, prompt_tokens - cached_tokens - cache_write_tokens)
        return (
            fresh * self.input
            + cached_tokens * cached_price
            + cache_write_tokens * write_price
            + completion_tokens * self.output
        ) / 1e6


@dataclass(frozen=True)
class ModelOptions:
    """How catbuddy talks to a model, from ``[model_options."model"]`` (longest prefix of the name wins):
    reasoning it is sent back, the effort asked for, cache breakpoints (catbuddy/llm/reasoning_policy.py)."""

    reasoning_effort: str = setting("", one_of(*EFFORTS))  # "": not sent; /model NAME EFFORT sets it too
    send_reasoning: str = setting("auto", one_of(*SEND_REASONING))  # auto: detected from base URL and model
    cache_breakpoints: bool | None = setting(
        None, boolean
    )  # None: on for Claude models behind OpenAI-compatible APIs


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
FALLBACK_MODEL_SPEC = ModelSpec(32_768, 4_096)  # [models.default] changes it


@dataclass(frozen=True)
class ContextSettings:
    """Context governance and compaction (docs/architecture.md §4, §5): ``[context]``."""

    keep_recent_results: int = setting(10, at_least(0))
    # Old tool results are stubbed only in batches that save this much: each batch costs one prompt-cache
    # miss, so it must shrink every later request enough to pay for it before the next compaction breaks the
    # prefix anyway. bench/bench_cache.py, 300 turns at 128k: 6k→×0.61 of sliding's billed input, 8k→×0.55,
    # 10k→×0.52, 12k→×0.49 (largest request ×1.13), 16k→×0.46 (largest ×1.20).
    microcompact_min_tokens: int = setting(12_000, at_least(0))
    compact_message_threshold: int = setting(50, at_least(2))
    compact_keep_recent: int = setting(25, at_least(1))
    compact_token_ratio: float = setting(0.8, between(0.05, 1.0))
    safety_margin: int = setting(1024, at_least(0))
    max_compact_failures: int = setting(3, at_least(1))
    compact_user_tokens: int = setting(2000, at_least(0))  # the user's own words verbatim in the summary
    compact_ledger_tokens: int = setting(1500, at_least(100))  # the code-built ledger in the summary
    recall_max_tokens: int = setting(2000, at_least(200))  # one recall result
    auto_compact: bool = setting(True, boolean)
    global_user_profile: bool = setting(False, boolean)
    default_encoding: str = setting("o200k_base", one_of(*ENCODINGS))


@dataclass(frozen=True)
class ToolSettings:
    """The tools and the bounds on one model reply: ``[tools]``."""

    exec_timeout: int = setting(60, at_least(1))
    exec_max_timeout: int = setting(600, at_least(1))
    allow_outside_work_root: bool = setting(False, boolean, risky="file tools may leave the work root")
    allow_private_network: bool = setting(False, boolean, risky="web_fetch may reach your local network")
    web_search_backend: str = setting(
        "", one_of("", "brave", "tavily", "searxng"), risky="web searches go to this service"
    )
    web_search_url: str = setting("", string, risky="web searches (and their key) go to this endpoint")
    web_search_api_key_env: str = setting(
        "", string, risky="this variable's value is sent to the search service"
    )
    deny_patterns: tuple[str, ...] = setting((), regex_list, additive=True)  # a project cannot remove yours
    allow_commands: tuple[str, ...] = setting((), string_list, risky="these commands run without asking")
    # Known-safe read-only commands (`ls`, `git log`, `rg foo`) run unasked in `ask` mode while the sandbox is in
    # force (they always do in auto-edit and yolo); false: `ask` asks for them too.
    auto_allow_read_only: bool = setting(
        True, boolean, risky="read-only commands run without asking", tightens=(False,)
    )
    # Bounds on what one model reply may ask for (a misbehaving model must not freeze or bloat the session).
    max_calls_per_reply: int = setting(64, at_least(1))
    max_argument_bytes: int = setting(256 * 1024, at_least(1024))
    max_result_chars: int = setting(100_000, at_least(1000))
    plan_max_steps: int = setting(50, at_least(1))  # update_plan refuses a longer plan
    # Checkpoints of the work tree before each turn's first change (catbuddy undo / rewind).
    checkpoints: bool = setting(True, boolean)
    checkpoint_max_file_mb: int = setting(10, at_least(1))  # bigger files are left out (and named once)


@dataclass(frozen=True)
class AgentSettings:
    """Subagents run by the `task` tool (docs/architecture.md §5c): ``[agents]``."""

    max_parallel: int = setting(3, at_least(1))  # task calls of one reply running at once
    max_depth: int = setting(1, at_least(0))  # 1: a subagent cannot start another; 0: no subagents
    max_turns: int = setting(20, at_least(1))  # model calls of a subagent unless its file says otherwise
    answer_tokens: int = setting(2000, at_least(100))  # the parent gets at most this much of an answer


@dataclass(frozen=True)
class SandboxSettings:
    """How `exec` is confined (catbuddy.sandbox) and what environment it gets: top-level keys."""

    mode: str = setting(
        "workspace-write",
        one_of(*SANDBOX_MODES),
        key="sandbox",
        risky="changes how commands are confined",
        tightens=("workspace-write", "read-only"),
        env=("CATBUDDY_SANDBOX",),
    )
    writable: tuple[str, ...] = setting(  # more paths commands may write (absolute or ~)
        (), path_list, key="sandbox_writable", risky="commands may write these paths"
    )
    network: bool = setting(False, boolean, key="sandbox_network", risky="commands may use the network")
    env_allow: tuple[str, ...] = setting(  # variables let through although they look secret (patterns)
        (), string_list, key="exec_env_allow", risky="these variables (secrets included) reach commands"
    )


@dataclass(frozen=True)
class MemorySettings:
    """Memory and Dream (docs/architecture.md §13): ``[memory]``."""

    dream: str = setting(
        "auto", one_of(*DREAM_MODES)
    )  # auto (idle, in the background), ask (diff first), off
    dream_model: str = setting("", string)  # "": the compact model, else the session's model
    dream_idle_minutes: float = setting(5.0, between(0, 1440))
    memory_max_lines: int = setting(200, at_least(10))
    memory_max_bytes: int = setting(25 * 1024, at_least(1024))
    dream_entry_tokens: int = setting(24_000, at_least(500))  # entry text one Dream run reads at most
    max_dream_failures: int = setting(3, at_least(1))  # failed runs in a row before auto Dream pauses


@dataclass(frozen=True)
class McpServerSettings:
    """One ``[mcpServers.<name>]`` entry: a stdio command or a streamable-HTTP url."""

    name: str
    command: str = setting("", string)
    args: tuple[str, ...] = setting((), string_list)
    env: Mapping[str, str] = setting({}, string_table)
    cwd: str = setting("", string)
    url: str = setting("", string)
    headers: Mapping[str, str] = setting({}, string_table)
    approval: str = setting("ask", one_of(*SERVER_APPROVALS))  # "auto" never asks
    tool_approval: Mapping[str, str] = setting({}, approval_table)
    startup_timeout: float = setting(10.0, between(0.1, 600))
    call_timeout: float = setting(60.0, between(0.1, 3600))
    disabled: bool = setting(False, boolean)


HOOK_EVENTS = ("user_prompt_submit", "pre_tool", "post_tool", "stop")


@dataclass(frozen=True)
class HookSettings:
    """One ``[hooks.<name>]`` entry: a command run at an event, given the event as JSON on stdin."""

    name: str
    event: str = required(one_of(*HOOK_EVENTS))
    command: str = required(string)
    matcher: str = setting("", string)  # a regular expression on the tool name ("": every tool)
    timeout: float = setting(30.0, between(0.1, 600))


def _check_hook(source: str, label: str, entry: dict[str, Any]) -> None:
    import re

    try:
        re.compile(entry.get("matcher") or "")
    except re.error as exc:
        raise ConfigError(
            source, f"{label}.matcher", f"a regular expression ({exc})", entry.get("matcher")
        ) from None


def _check_model(source: str, label: str, entry: dict[str, Any]) -> None:
    window, out = entry.get("context_window"), entry.get("max_output_tokens")
    if window is not None and out is not None and out >= window:
        raise ConfigError(
            source, f"{label}.max_output_tokens", f"smaller than context_window ({window})", out
        )


def _model(name: str, entry: dict[str, Any]) -> ModelSpec:
    return replace(FALLBACK_MODEL_SPEC, **entry) if name == "default" else ModelSpec(**entry)


def _check_server(source: str, label: str, entry: dict[str, Any]) -> None:
    if not entry.get("command") and not entry.get("url"):
        raise ConfigError(source, label, "a server with `command` (stdio) or `url` (streamable HTTP)")
    if entry.get("command") and entry.get("url"):
        raise ConfigError(source, label, "either `command` or `url`, not both")


HOOKS = Entries(
    HookSettings,
    'a table of hooks, e.g. [hooks.lint] with event = "post_tool" and command = "ruff check ."',
    quoted=False,
    required="set",
    required_hint=f"Each hook needs `event` ({', '.join(HOOK_EVENTS)}) and `command`",
    check_entry=_check_hook,
    build=lambda name, entry: HookSettings(name=name, **entry),
    risky="runs these commands at every prompt and tool call",
)
MODELS = Entries(
    ModelSpec,
    'a table of models, e.g. [models."gpt-4o"]',
    required="set (an integer)",
    required_hint="context_window is needed; max_output_tokens defaults to 4,096 (at most a quarter of the window)",
    complete=("default",),  # [models.default] changes only what it names
    check_entry=_check_model,
    build=_model,
)
PRICES = Entries(
    ModelPrice,
    'a table of model prices, e.g. [prices."gpt-4o"]',
    required="set (US dollars per million tokens)",
    required_hint="input and output are both needed; cached_input defaults to input (no discount assumed)",
)
MODEL_OPTIONS = Entries(
    ModelOptions,
    'a table of model options, e.g. [model_options."deepseek-reasoner"]',
)
MCP_SERVERS = Entries(
    McpServerSettings,
    "a table of servers, e.g. [mcpServers.time]",
    names=("mcpServers", "mcp_servers"),  # Claude's spelling first
    quoted=False,
    ignored={"type": one_of("stdio", "http", "streamable-http", "streamable_http")},  # told by command/url
    check_entry=_check_server,
    build=lambda name, entry: McpServerSettings(name=name, **entry),
    risky="runs these servers at start-up",
)


@dataclass(frozen=True)
class Settings:
    model: str | None = setting(None, string, env=("CATBUDDY_MODEL",))
    # openai: any OpenAI-compatible endpoint; anthropic: Anthropic's Messages API (catbuddy/llm/anthropic_provider.py)
    provider: str = setting(
        "openai", one_of(*PROVIDERS), risky="requests go to this kind of API", env=("CATBUDDY_PROVIDER",)
    )
    base_url: str | None = setting(
        None,
        string,
        risky="requests (and your API key) go to this endpoint",
        env=("OPENAI_BASE_URL", "CATBUDDY_BASE_URL"),
    )
    api_key_env: str = setting(
        DEFAULT_API_KEY_ENV, string, risky="this variable's value is sent as the API key"
    )
    api_key: str | None = setting(
        None, string, risky="a key from the repository is used for your requests", repr=False
    )
    compact_model: str | None = setting(None, string, env=("CATBUDDY_COMPACT_MODEL",))
    approval: str = setting(
        "ask",
        one_of(*APPROVAL_MODES),
        risky="changes what asks before it runs",
        tightens=("ask",),
        env=("CATBUDDY_APPROVAL",),
    )
    max_iterations: int = setting(50, at_least(1))
    request_timeout: float = setting(600.0, between(1, 3600))  # seconds for a whole answer
    connect_timeout: float = setting(10.0, between(0.1, 600))  # seconds to open the connection
    # Seconds a stream may stay silent (the wait for its first byte included).
    stream_idle_timeout: float = setting(60.0, between(0.1, 3600))
    max_retries: int = setting(4, at_least(0))
    models: Mapping[str, ModelSpec] = table(MODELS)
    prices: Mapping[str, ModelPrice] = table(PRICES)
    model_options: Mapping[str, ModelOptions] = table(MODEL_OPTIONS)
    context: ContextSettings = table(Section(ContextSettings))
    tools: ToolSettings = table(Section(ToolSettings))
    memory: MemorySettings = table(Section(MemorySettings))
    agents: AgentSettings = table(Section(AgentSettings))
    mcp_servers: Mapping[str, McpServerSettings] = table(MCP_SERVERS)
    hooks: Mapping[str, HookSettings] = table(HOOKS)
    sandbox: SandboxSettings = table(TopLevel(SandboxSettings))
    sources: tuple[str, ...] = ()
    origins: Mapping[str, str] = field(default_factory=dict)  # top-level key → the source that set it last
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

    def options_for(self, model: str | None = None) -> ModelOptions:
        """The model's ``[model_options]`` entry (exact name, else longest prefix), or the defaults."""
        return _longest_prefix(model or self.model_name, self.model_options) or ModelOptions()

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
    for known in (overrides, KNOWN_MODELS):
        found = _longest_prefix(model, known)
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

SCHEMA = Schema.of(Settings)  # every declaration above, read once


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
        raise _not_toml(path, text, exc) from None


TOML_WHERE = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _not_toml(path: Path, text: str, exc: tomllib.TOMLDecodeError) -> ConfigError:
    """Name the line and column of a TOML syntax error, and show that line."""
    found = TOML_WHERE.search(str(exc))
    if found is None:  # "at end of document" and the like
        return ConfigError(str(path), "(file)", "valid TOML", hint=str(exc))
    line_no, column = int(found.group(1)), int(found.group(2))
    reason = TOML_WHERE.sub("", str(exc))
    lines = text.splitlines()
    shown = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
    return ConfigError(
        str(path),
        f"(line {line_no}, column {column})",
        "valid TOML",
        hint=f"{reason}: line {line_no} reads `{shown.strip()}`. Fix it (strings need quotes, lists need a "
        "closing ]), or remove the line",
    )


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
    origins: dict[str, str] = {}
    project_trust: ProjectTrust | None = None
    global_file, project_file = config_files(global_home, work_root)
    if global_file.exists():  # a folder or an unreadable file in its place is an error, not "no config"
        layer = SCHEMA.validate(str(global_file), read_toml(global_file))
        merged = SCHEMA.merge(merged, layer)
        sources.append(str(global_file))
        origins.update(dict.fromkeys(layer, str(global_file)))
    if project_file.exists():
        layer = SCHEMA.validate(str(project_file), read_toml(project_file))
        safe, risky = trust.split_layer(layer, SCHEMA)
        if risky:
            project_trust = trust.assess(global_home, work_root, project_file, risky, SCHEMA)
            if trust_project and not project_trust.applied:
                project_trust = replace(project_trust, state=trust.TrustState.TRUSTED)
            if not project_trust.applied:
                layer = safe
        merged = SCHEMA.merge(merged, layer)
        sources.append(str(project_file))
        origins.update(dict.fromkeys(layer, str(project_file)))
    for var, key in SCHEMA.environment().items():
        if env.get(var):
            merged = SCHEMA.merge(merged, SCHEMA.validate(f"environment variable {var}", {key: env[var]}))
            origins[key.split(".")[0]] = f"environment ({var})"
            if "environment" not in sources:
                sources.append("environment")
    if flags:
        given = {k: v for k, v in flags.items() if v is not None}
        if given:
            merged = SCHEMA.merge(merged, SCHEMA.validate("command-line flags", given))
            sources.append("flags")
            origins.update(dict.fromkeys(given, "command-line flags"))
    return replace(_build(merged, env, tuple(sources)), project_trust=project_trust, origins=origins)


def _build(merged: dict[str, Any], env: Mapping[str, str], sources: tuple[str, ...]) -> Settings:
    settings = Settings(**SCHEMA.build(merged), sources=sources)
    if settings.provider == "anthropic":
        if "api_key_env" not in merged:
            settings = replace(settings, api_key_env=ANTHROPIC_API_KEY_ENV)
        if not settings.base_url and env.get(ANTHROPIC_BASE_URL_ENV):
            settings = replace(settings, base_url=env[ANTHROPIC_BASE_URL_ENV])
    return replace(settings, api_key=settings.api_key or env.get(settings.api_key_env) or None)
