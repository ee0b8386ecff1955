"""CLI fixtures: a project directory, a scripted server, and `catbuddy` run as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401
from catbuddy.testing.scripted_llm import ScriptedLLM

CLI_TIMEOUT = 60.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture
def llm_env(scripted_llm: ScriptedLLM) -> dict[str, str]:  # noqa: F811
    """Environment pointing a subprocess at the scripted server (CATBUDDY_HOME comes from the test's)."""
    env = dict(os.environ)
    env.update(
        {
            "OPENAI_BASE_URL": scripted_llm.base_url,
            "OPENAI_API_KEY": "test-key",
            "CATBUDDY_MODEL": "scripted",
            "CATBUDDY_APPROVAL": "yolo",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.fixture
def cli(project: Path, llm_env: dict[str, str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``cli("run", "hi", input=..., env={...})``: run `python -m catbuddy.cli --cwd PROJECT ...`."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None, **kw: Any):
        return subprocess.run(
            [sys.executable, "-m", "catbuddy.cli", "--cwd", str(project), *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env={**llm_env, **(env or {})},
            timeout=CLI_TIMEOUT,
            **kw,
        )

    return run
