"""Shared fixtures: every test gets its own catbuddy home and work root, never the user's."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from catbuddy.config import Settings
from catbuddy.workspace import Workspace


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("catbuddy-home")
    monkeypatch.setenv("CATBUDDY_HOME", str(home))
    for var in (
        "CATBUDDY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "CATBUDDY_BASE_URL", "CATBUDDY_APPROVAL",
        "CATBUDDY_SANDBOX", "CATBUDDY_BWRAP",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def workspace(tmp_path: Path, isolated_home: Path) -> Workspace:
    root = tmp_path / "project"
    root.mkdir()
    return Workspace(work_root=root.resolve(), home=isolated_home)


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def full_disk_for_sessions(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """``fill(spare)``: after ``spare`` more fsyncs of session files, every one fails with ENOSPC — how a
    full disk shows where the filesystem allocates late (ext4, XFS, NFS: the write is cached, the fsync
    fails). Other files (memory, calibration) still write."""
    real_fsync = os.fsync
    left: list[int] = []

    def fsync(fd: int) -> None:
        if left and "/sessions/" in os.readlink(f"/proc/self/fd/{fd}"):
            if left[0] <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            left[0] -= 1
        real_fsync(fd)

    def fill(spare: int = 0) -> None:
        left[:] = [spare]

    monkeypatch.setattr(os, "fsync", fsync)
    return fill
