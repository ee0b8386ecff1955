"""Where the shipped data (templates, workspace defaults) lives.

In a wheel they sit inside the package (``catbuddy/_data``); in a source checkout or an editable
install they are the top-level ``templates/`` and ``workspace_defaults/`` folders.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _shipped(name: str) -> Path:
    inside = _PACKAGE_DIR / "_data" / name
    if inside.is_dir():
        return inside
    beside = _PACKAGE_DIR.parent / name
    if beside.is_dir():
        return beside
    raise FileNotFoundError(f"catbuddy's shipped folder {name!r} is missing; reinstall catbuddy")


@cache
def templates_dir() -> Path:
    return _shipped("templates")


@cache
def workspace_defaults_dir() -> Path:
    return _shipped("workspace_defaults")
