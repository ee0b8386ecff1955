"""Is the sandbox in force, and what does catbuddy say when it is not."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from catbuddy.config import SandboxSettings
from catbuddy.sandbox import SandboxStatus, probe, status_for


@pytest.fixture(autouse=True)
def fresh_probe() -> None:
    probe.clear_cache()
    probe._warned.clear()


def test_a_missing_bwrap_falls_back_and_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATBUDDY_BWRAP", "/nonexistent/bwrap")
    status = status_for(SandboxSettings())
    assert status.fallback and not status.active and status.label == "unavailable"
    assert "not installed" in status.problem and "apt-get install bubblewrap" in status.problem
    assert 'sandbox = "off"' in status.problem
    assert "every one asks first" in status.describe()


def test_a_bwrap_that_cannot_create_namespaces_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel does not "
        "allow non-privileged user namespaces.' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CATBUDDY_BWRAP", str(fake))
    status = status_for(SandboxSettings())
    assert status.fallback and "No permissions to creating new namespace" in status.problem
    assert "unprivileged_userns_clone" in status.problem


def test_the_problem_is_logged_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("CATBUDDY_BWRAP", "/nonexistent/bwrap")
    with caplog.at_level(logging.INFO):  # the front ends say it to the user, once (a Notice)
        for _ in range(3):
            status_for(SandboxSettings())
    assert len([r for r in caplog.records if "sandbox unavailable" in r.getMessage()]) == 1


def test_off_never_probes_and_is_not_a_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CATBUDDY_BWRAP", "/nonexistent/bwrap")
    status = status_for(SandboxSettings(mode="off"))
    assert status.label == "off" and not status.fallback and not status.active
    assert "unsandboxed" in status.describe()


def test_describe_says_what_is_writable_and_the_network() -> None:
    active = SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap", writable=("/data",))
    assert active.describe() == (
        "sandbox workspace-write (bubblewrap): the work root and a private /tmp, /data writable, "
        "catbuddy's home read-only, network off"
    )
    assert "nothing but a private /tmp" in SandboxStatus("read-only", True, bwrap="b").describe()
    assert "network on" in SandboxStatus("workspace-write", True, bwrap="b", network=True).describe()


def test_the_startup_notice_says_when_commands_are_unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from catbuddy.config import Settings
    from catbuddy.sandbox import startup_notice

    monkeypatch.setenv("CATBUDDY_BWRAP", "/nonexistent/bwrap")
    assert "every one asks for approval first" in (startup_notice(Settings()) or "")
    assert "unsandboxed" in (startup_notice(replace(Settings(), sandbox=SandboxSettings(mode="off"))) or "")
