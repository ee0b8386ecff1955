"""Trusted projects: a repository's `.catbuddy/config.toml` may not run code or widen permissions until the
user trusts it.

The risky settings are those that run something or loosen a guard: `mcpServers` (commands started at
start-up), `tools.allow_commands`, `approval`, `sandbox`/`sandbox_writable`/`sandbox_network`,
`exec_env_allow`, `base_url` and the key settings (where your key is sent, which variable is sent as
the key), `tools.allow_outside_work_root`, `tools.allow_private_network` and the web-search endpoint and
key. A value that only tightens (``approval = "ask"``, ``sandbox = "read-only"``, an empty list, a false
flag) is not risky. `deny_patterns` add up across files, so a project cannot remove yours.

Decisions live in ``<home>/trust.json``, keyed by the work root and a hash of the risky settings: the
same settings are asked about once; any change asks again. Until trusted, the risky settings are ignored
(the rest of the file applies) and nothing from them runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from catbuddy.redact import MASK, redact_url

log = logging.getLogger(__name__)

TRUST_FILE = "trust.json"
TRUST_VERSION = 1
RISKY_TOP = frozenset(
    {"base_url", "api_key", "api_key_env", "approval", "sandbox", "sandbox_writable", "sandbox_network",
     "exec_env_allow", "mcp_servers"}
)
RISKY_TOOLS = frozenset(
    {"allow_commands", "allow_outside_work_root", "allow_private_network", "web_search_backend",
     "web_search_url", "web_search_api_key_env"}
)
TIGHTENING = {"approval": ("ask",), "sandbox": ("workspace-write", "read-only"), "sandbox_network": (False,)}
EFFECTS = {
    "base_url": "requests (and your API key) go to this endpoint",
    "api_key": "a key from the repository is used for your requests",
    "api_key_env": "this variable's value is sent as the API key",
    "approval": "changes what asks before it runs",
    "sandbox": "changes how commands are confined",
    "sandbox_writable": "commands may write these paths",
    "sandbox_network": "commands may use the network",
    "exec_env_allow": "these variables (secrets included) reach commands",
    "tools.allow_commands": "these commands run without asking",
    "tools.allow_outside_work_root": "file tools may leave the work root",
    "tools.allow_private_network": "web_fetch may reach your local network",
    "tools.web_search_backend": "web searches go to this service",
    "tools.web_search_url": "web searches (and their key) go to this endpoint",
    "tools.web_search_api_key_env": "this variable's value is sent to the search service",
}


class TrustState(StrEnum):
    TRUSTED = "trusted"
    NEW = "new"  # never asked
    CHANGED = "changed"  # trusted or refused before, with other settings
    DISTRUSTED = "distrusted"  # the user said no to exactly these settings


@dataclass(frozen=True)
class ProjectTrust:
    """A project config with risky settings, and whether they apply."""

    work_root: Path
    config_path: Path
    risky: Mapping[str, Any]
    digest: str
    state: TrustState
    keys: tuple[str, ...] = field(default=())

    @property
    def applied(self) -> bool:
        return self.state is TrustState.TRUSTED

    @property
    def needs_decision(self) -> bool:
        return self.state in (TrustState.NEW, TrustState.CHANGED)

    def lines(self) -> list[str]:
        """The risky settings, one line each, as the user should see them before deciding."""
        out: list[str] = []
        for key, value in self.risky.items():
            if key == "mcp_servers":
                for name, server in value.items():
                    out.append(f"mcpServers.{name}: {_server(server)}")
            elif key == "tools":
                for inner, inner_value in value.items():
                    out.append(f"tools.{inner} = {_show(inner, inner_value)}  ({EFFECTS.get('tools.' + inner, '')})")
            else:
                out.append(f"{key} = {_show(key, value)}  ({EFFECTS.get(key, '')})")
        return out

    def warning(self) -> str:
        what = "were refused before" if self.state is TrustState.DISTRUSTED else "are not trusted yet"
        changed = " (they changed since you last decided)" if self.state is TrustState.CHANGED else ""
        return (
            f"ignoring the settings in {self.config_path} that run code or widen permissions "
            f"({', '.join(self.keys)}): they {what}{changed}. Review them, then run with --trust-project "
            "to trust them."
        )


def _server(server: Mapping[str, Any]) -> str:
    if server.get("url"):
        return f"connects to {redact_url(str(server['url']))}"
    command = " ".join([str(server.get("command", "")), *map(str, server.get("args", ()))])
    return f"runs `{command.strip()}` at start-up"


def _show(key: str, value: Any) -> str:
    if key == "api_key":
        return MASK
    if isinstance(value, str):
        return json.dumps(redact_url(value))
    if isinstance(value, tuple | list):
        return json.dumps([redact_url(str(v)) for v in value])
    return json.dumps(value)


# --- splitting a layer --------------------------------------------------------------------------------


def split_layer(layer: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A validated project layer as (what applies anyway, what needs trust)."""
    safe: dict[str, Any] = {}
    risky: dict[str, Any] = {}
    for key, value in layer.items():
        if key == "tools" and isinstance(value, Mapping):
            inner_safe = {k: v for k, v in value.items() if k not in RISKY_TOOLS or _tightens(k, v)}
            inner_risky = {k: v for k, v in value.items() if k in RISKY_TOOLS and not _tightens(k, v)}
            if inner_safe:
                safe["tools"] = inner_safe
            if inner_risky:
                risky["tools"] = inner_risky
        elif key in RISKY_TOP and not _tightens(key, value):
            risky[key] = value
        else:
            safe[key] = value
    return safe, risky


def _tightens(key: str, value: Any) -> bool:
    if key in TIGHTENING:
        return value in TIGHTENING[key]
    return value in (False, (), [], {}, "")


def digest(risky: Mapping[str, Any]) -> str:
    canonical = json.dumps(risky, sort_keys=True, default=_jsonable, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def risky_keys(risky: Mapping[str, Any]) -> tuple[str, ...]:
    keys: list[str] = []
    for key, value in risky.items():
        if key == "tools":
            keys += [f"tools.{k}" for k in value]
        elif key == "mcp_servers":
            keys += [f"mcpServers.{name}" for name in value]
        else:
            keys.append(key)
    return tuple(keys)


# --- decisions on disk ----------------------------------------------------------------------------------


def assess(home: Path, work_root: Path, config_path: Path, risky: Mapping[str, Any]) -> ProjectTrust:
    root = work_root.resolve()
    value = digest(risky)
    decision = load_decisions(home).get(str(root))
    if decision is None:
        state = TrustState.NEW
    elif decision.get("digest") != value:
        state = TrustState.CHANGED
    else:
        state = TrustState.TRUSTED if decision.get("trusted") is True else TrustState.DISTRUSTED
    return ProjectTrust(root, config_path, dict(risky), value, state, risky_keys(risky))


def load_decisions(home: Path) -> dict[str, dict[str, Any]]:
    path = home / TRUST_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("cannot read the trust decisions in %s (%s); asking again", path, exc)
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    return {k: v for k, v in projects.items() if isinstance(v, dict)} if isinstance(projects, dict) else {}


def record(home: Path, project: ProjectTrust, trusted: bool) -> None:
    """Remember the user's answer for these exact settings in this work root (atomically)."""
    decisions = load_decisions(home)
    decisions[str(project.work_root)] = {
        "digest": project.digest,
        "trusted": trusted,
        "config": str(project.config_path),
        "keys": list(project.keys),
        "decided_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    home.mkdir(parents=True, exist_ok=True)
    payload = json.dumps({"version": TRUST_VERSION, "projects": decisions}, indent=2, ensure_ascii=False)
    descriptor, temporary = tempfile.mkstemp(dir=home, prefix=".trust-", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(payload + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, home / TRUST_FILE)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)

