"""Trusted projects: a repository's `.catbuddy/config.toml` may not run code or widen permissions until the
user trusts it.

The risky settings are those that run something or loosen a guard: `mcpServers` (commands started at
start-up), `tools.allow_commands`, `approval`, `sandbox`/`sandbox_writable`/`sandbox_network`,
`exec_env_allow`, `base_url` and the key settings (where your key is sent, which variable is sent as
the key), `tools.allow_outside_work_root`, `tools.allow_private_network` and the web-search endpoint and
key. Each is marked where it is declared (``risky=`` in catbuddy/config.py, read through the
``Schema``). A value that only tightens (``approval = "ask"``, ``sandbox = "read-only"``, an empty list, a
false flag) is not risky. `deny_patterns` add up across files, so a project cannot remove yours.

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
from typing import TYPE_CHECKING, Any

from catbuddy.redact import MASK, redact_url

if TYPE_CHECKING:
    from catbuddy.config_schema import Schema

log = logging.getLogger(__name__)

TRUST_FILE = "trust.json"
TRUST_VERSION = 1


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
    effects: Mapping[str, str] = field(default_factory=dict)  # dotted key → what it lets the project do

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
            elif isinstance(value, Mapping):  # a [section]: one line per setting
                for inner, inner_value in value.items():
                    out.append(self._line(f"{key}.{inner}", inner, inner_value))
            else:
                out.append(self._line(key, key, value))
        return out

    def _line(self, dotted: str, key: str, value: Any) -> str:
        effect = self.effects.get(dotted)
        return f"{dotted} = {_show(key, value)}" + (f"  ({effect})" if effect else "")

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


def split_layer(layer: Mapping[str, Any], schema: Schema) -> tuple[dict[str, Any], dict[str, Any]]:
    """A validated project layer as (what applies anyway, what needs trust)."""
    safe: dict[str, Any] = {}
    risky: dict[str, Any] = {}
    for key, value in layer.items():
        if key in schema.sections and isinstance(value, Mapping):
            inner_risky = {k: v for k, v in value.items() if schema.needs_trust(k, v, section=key)}
            inner_safe = {k: v for k, v in value.items() if k not in inner_risky}
            if inner_safe or not inner_risky:
                safe[key] = inner_safe
            if inner_risky:
                risky[key] = inner_risky
        elif schema.needs_trust(key, value):
            risky[key] = value
        else:
            safe[key] = value
    return safe, risky


def digest(risky: Mapping[str, Any]) -> str:
    canonical = json.dumps(risky, sort_keys=True, default=_jsonable, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def risky_keys(risky: Mapping[str, Any], schema: Schema) -> tuple[str, ...]:
    keys: list[str] = []
    for key, value in risky.items():
        entries = schema.entries.get(key)
        if entries is not None:
            keys += [f"{entries.names[0]}.{name}" for name in value]
        elif key in schema.sections:
            keys += [f"{key}.{k}" for k in value]
        else:
            keys.append(key)
    return tuple(keys)


# --- decisions on disk ----------------------------------------------------------------------------------


def assess(
    home: Path, work_root: Path, config_path: Path, risky: Mapping[str, Any], schema: Schema
) -> ProjectTrust:
    root = work_root.resolve()
    value = digest(risky)
    decision = load_decisions(home).get(str(root))
    if decision is None:
        state = TrustState.NEW
    elif decision.get("digest") != value:
        state = TrustState.CHANGED
    else:
        state = TrustState.TRUSTED if decision.get("trusted") is True else TrustState.DISTRUSTED
    keys = risky_keys(risky, schema)
    effects = {key: effect for key, effect in schema.effects().items() if key in keys}
    return ProjectTrust(root, config_path, dict(risky), value, state, keys, effects)


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
