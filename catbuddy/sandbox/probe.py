"""Is bubblewrap here, and can it start a sandbox on this machine? Asked once per process and bwrap path."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

log = logging.getLogger(__name__)

BWRAP_ENV = "CATBUDDY_BWRAP"  # another bwrap binary (or a missing path, to test the fallback)
PROBE_TIMEOUT_SECONDS = 10.0
# The namespaces every sandboxed exec uses; the probe asks for all of them, so a probe that passes means
# a real call can start.
NAMESPACE_FLAGS = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`, Fedora: `sudo dnf install "
    'bubblewrap`, Arch: `sudo pacman -S bubblewrap`), or set `sandbox = "off"` to run commands unsandboxed'
)


@dataclass(frozen=True)
class Probe:
    bwrap: str | None  # the binary found, if any
    ok: bool
    problem: str = ""  # why the sandbox cannot be used, in one line, with what to do


def find_bwrap() -> str | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        return configured if os.path.isfile(configured) and os.access(configured, os.X_OK) else None
    return shutil.which("bwrap")


_warned: set[str] = set()


def probe() -> Probe:
    """Whether bwrap can start here; the answer is cached for the process (per binary), and a sandbox
    that cannot be used is logged once."""
    if not sys.platform.startswith("linux"):
        result = Probe(None, False, f"the sandbox needs Linux and bubblewrap; this is {sys.platform}")
    elif (bwrap := find_bwrap()) is None:
        where = f" ({BWRAP_ENV}={os.environ[BWRAP_ENV]} is not an executable)" if os.environ.get(BWRAP_ENV) else ""
        result = Probe(None, False, f"bubblewrap (bwrap) is not installed{where}: {INSTALL_HINT}")
    else:
        result = _probe(bwrap)
    if not result.ok and result.problem not in _warned:
        _warned.add(result.problem)
        log.info("sandbox unavailable, every command will ask for approval: %s", result.problem)
    return result


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str) -> Probe:
    argv = [bwrap, *NAMESPACE_FLAGS, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"]
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS
        )
    except (OSError, subprocess.SubprocessError) as exc:
        result = Probe(bwrap, False, f"bubblewrap ({bwrap}) cannot be run: {exc}")
    else:
        if done.returncode == 0:
            return Probe(bwrap, True)
        first = next((line for line in done.stderr.splitlines() if line.strip()), f"exit code {done.returncode}")
        result = Probe(bwrap, False, f"bubblewrap cannot start a sandbox here: {first.strip()}{_hint(first)}")
    return result


def _hint(message: str) -> str:
    lowered = message.lower()
    if "namespace" in lowered or "uid map" in lowered or "permission denied" in lowered:
        return (
            " (user namespaces are off: enable them with `sudo sysctl kernel.unprivileged_userns_clone=1`, or "
            "on Ubuntu 24.04+ `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`; in a container, "
            'run it with user namespaces allowed). Until then set `sandbox = "off"` to run commands unsandboxed'
        )
    return ""


def clear_cache() -> None:
    _probe.cache_clear()
