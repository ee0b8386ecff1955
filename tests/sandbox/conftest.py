"""A work root, a catbuddy home and a throwaway directory outside both, all under the test's tmp dir."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.tools.base import ToolContext
from catbuddy.workspace import Workspace


@pytest.fixture
def sandbox_ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "proj"
    (root / ".catbuddy").mkdir(parents=True)
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    return ToolContext(Workspace(work_root=root.resolve(), home=home.resolve()), Settings())


@pytest.fixture
def outside() -> Iterator[Path]:
    """A throwaway directory outside the work root, the only kind of target a destructive test may use.
    Not under /tmp: the sandbox has a private /tmp, so host paths there are not even visible."""
    base = next((d for d in ("/var/tmp", str(Path.home())) if os.access(d, os.W_OK)), None)
    if base is None:
        pytest.skip("no writable directory outside /tmp for a throwaway target")
    path = Path(tempfile.mkdtemp(prefix="catbuddy-test-outside-", dir=base)).resolve()
    (path / "keep.txt").write_text("still here")
    yield path
    shutil.rmtree(path, ignore_errors=True)
