"""The one line a sandboxed failure gets, so the model asks instead of retrying."""

from __future__ import annotations

import pytest

from catbuddy.sandbox import SandboxStatus
from catbuddy.sandbox.classify import sandbox_note

ACTIVE = SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap")
ROOT = "/work/proj"


@pytest.mark.parametrize(
    ("output", "path"),
    [
        ("touch: cannot touch '/etc/x': Read-only file system", "/etc/x"),
        ("mkdir: cannot create directory ‘/opt/y’: Read-only file system", "/opt/y"),
        ("bash: line 1: /usr/z: Read-only file system", "/usr/z"),
        ("OSError: [Errno 30] Read-only file system: '/srv/w'", "/srv/w"),
        ("Error: EROFS: read-only file system, open '/var/v'", "/var/v"),
        ("bash: line 1: out/rel.txt: Read-only file system", "/work/proj/out/rel.txt"),
    ],
)
def test_a_read_only_failure_names_the_path(output: str, path: str) -> None:
    note = sandbox_note(output, 1, ACTIVE, [], ROOT)
    assert note.startswith(f"[sandbox] {path} is read-only here") and "\n" not in note


def test_catbuddys_own_files_point_to_the_file_tools() -> None:
    note = sandbox_note("bash: /work/proj/.catbuddy/config.toml: Read-only file system", 1, ACTIVE, ["/work/proj/.catbuddy"], ROOT)
    assert "use write_file or edit_file" in note


@pytest.mark.parametrize(
    "output",
    [
        "curl: (6) Could not resolve host: example.com",
        "pip: Failed to establish a new connection: [Errno 101] Network is unreachable",
        "npm ERR! getaddrinfo EAI_AGAIN registry.npmjs.org",
        "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com",
        "dial tcp: lookup proxy.golang.org: no such host",
    ],
)
def test_a_network_failure_says_the_network_is_off(output: str) -> None:
    assert "network is off" in sandbox_note(output, 1, ACTIVE, [], ROOT)


def test_no_note_on_success_unsandboxed_or_an_unrelated_failure() -> None:
    assert sandbox_note("Read-only file system", 0, ACTIVE, [], ROOT) == ""
    assert sandbox_note("Read-only file system", 1, SandboxStatus("off", False), [], ROOT) == ""
    assert sandbox_note("AssertionError: 1 != 2", 1, ACTIVE, [], ROOT) == ""
    with_network = SandboxStatus("workspace-write", True, bwrap="b", network=True)
    assert sandbox_note("Could not resolve host: x", 6, with_network, [], ROOT) == ""
