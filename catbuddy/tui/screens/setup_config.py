"""First-run setup without Textual: test an endpoint, and write keys into config.toml keeping the rest."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

CONNECT_TIMEOUT = 10.0
TOP_LEVEL_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
TABLE_HEADER = re.compile(r"^\s*\[")
LOCAL_HOSTS = ("localhost", "localhost.localdomain")


@dataclass(frozen=True)
class ConnectionResult:
    ok: bool
    message: str


def is_local_endpoint(base_url: str) -> bool:
    """An endpoint on this machine (localhost, 127.x, ::1) or a private network, where servers such as
    Ollama, vLLM or llama.cpp usually need no key."""
    host = (urlparse(base_url).hostname or "").lower()
    if host in LOCAL_HOSTS or host.endswith(".localhost") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def missing_key_message(base_url: str, key_env: str) -> str:
    """The words for "no key anywhere", different for a local server (which may need none)."""
    where = base_url.rstrip("/") or "the endpoint"
    variable = key_env or "OPENAI_API_KEY"
    if is_local_endpoint(base_url):
        return (
            f"No API key: fine for a local server at {where} that needs none; "
            f"otherwise enter a key or set {variable}."
        )
    return f"No API key: the endpoint at {where} will likely refuse requests. Enter a key or set {variable}."


def _toml_string(value: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits.
    return json.dumps(value, ensure_ascii=False)


def update_config(path: Path, values: dict[str, str]) -> None:
    """Set top-level string keys in a TOML file; other keys, tables and comments stay as they were."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if text:
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(
                f"{path} is not valid TOML ({exc}); fix or remove it, then run setup again"
            ) from None
    lines = text.splitlines()
    top_end = next((i for i, line in enumerate(lines) if TABLE_HEADER.match(line)), len(lines))
    pending = dict(values)
    for index in range(top_end):
        match = TOP_LEVEL_KEY.match(lines[index])
        if match and match.group(1) in pending:
            key = match.group(1)
            lines[index] = f"{key} = {_toml_string(pending.pop(key))}"
    insert_at = top_end
    while insert_at > 0 and not lines[insert_at - 1].strip():
        insert_at -= 1  # new keys go right after the existing top-level ones, not after blank lines
    new_lines = [f"{key} = {_toml_string(value)}" for key, value in pending.items()]
    lines[insert_at:insert_at] = new_lines
    if top_end < len(lines) and insert_at == top_end and new_lines:
        lines.insert(insert_at + len(new_lines), "")
    result = "\n".join(lines).rstrip("\n") + "\n"
    tomllib.loads(result)  # never leave a broken file behind
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result, encoding="utf-8")
    if "api_key" in values:
        os.chmod(path, 0o600)  # it now holds a secret


async def check_connection(base_url: str, api_key: str, model: str, *, key_env: str = "") -> ConnectionResult:
    """GET {base_url}/models; when an endpoint has no model list, a one-token chat call instead."""
    import httpx

    base = base_url.rstrip("/")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with httpx.AsyncClient(timeout=CONNECT_TIMEOUT) as client:
            response = await client.get(f"{base}/models", headers=headers)
            if response.status_code in (404, 405):
                response = await client.post(
                    f"{base}/chat/completions",
                    headers=headers,
                    json={"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1},
                )
    except httpx.HTTPError as exc:
        return ConnectionResult(
            False,
            f"Could not reach {base} ({type(exc).__name__}: {exc}). Check the endpoint URL "
            "(it usually ends in /v1; Ollama: http://localhost:11434/v1) and that the server runs.",
        )
    if response.status_code in (401, 403) and not api_key:
        return ConnectionResult(
            False,
            f"{base} needs an API key (HTTP {response.status_code}) and none was sent. "
            f"Enter a key or set {key_env or 'OPENAI_API_KEY'}.",
        )
    if response.status_code in (401, 403):
        return ConnectionResult(
            False, f"{base} refused the key (HTTP {response.status_code}). Check the API key."
        )
    if response.status_code >= 400:
        return ConnectionResult(False, f"{base} answered HTTP {response.status_code}: {response.text[:200]}")
    note = ""
    try:
        listed = [item.get("id") for item in response.json().get("data", []) if isinstance(item, dict)]
    except (ValueError, AttributeError):
        listed = []
    if listed and model and model not in listed:
        note = f" Note: `{model}` is not in its model list ({', '.join(map(str, listed[:5]))}…)."
    return ConnectionResult(True, f"Connected to {base}.{note}")
