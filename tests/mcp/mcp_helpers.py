"""Helpers for the MCP tests: real servers as settings, child-process bookkeeping."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from catbuddy.config import McpServerSettings
from catbuddy.mcp.client import McpManager, ServerStatus

TINY_SERVER = Path(__file__).with_name("tiny_stdio_server.py")  # wire-level, starts in milliseconds


def python_server(name: str, *args: str, **options: Any) -> McpServerSettings:
    """A stdio server run by this interpreter, so the venv's packages are there."""
    return McpServerSettings(name=name, command=sys.executable, args=tuple(args), **options)


def tiny_stdio(name: str = "tiny", *args: str, **options: Any) -> McpServerSettings:
    return python_server(name, str(TINY_SERVER), *args, **options)


def time_server(name: str = "time", **options: Any) -> McpServerSettings:
    return python_server(name, "-m", "mcp_server_time", "--local-timezone", "UTC", **options)


def git_server(repo: Path, name: str = "git", **options: Any) -> McpServerSettings:
    return python_server(name, "-m", "mcp_server_git", "--repository", str(repo), **options)


def make_git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "-C", str(path), "add", "README.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "first"], check=True, env=env)
    (path / "new.txt").write_text("untracked\n")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def live_children() -> dict[int, str]:
    """Live (non-zombie) child processes of this test process: pid -> command line (Linux /proc)."""
    me = os.getpid()
    children: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == me and state != "Z":
            children[int(entry.name)] = cmdline.strip()
    return children


def child_pid(marker: str) -> int:
    matches = [pid for pid, cmd in live_children().items() if marker in cmd]
    assert len(matches) == 1, f"expected one child running {marker!r}, found {matches}"
    return matches[0]


async def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)


def status_of(manager: McpManager, name: str) -> ServerStatus:
    return next(s for s in manager.statuses() if s.name == name)
