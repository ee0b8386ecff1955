"""How one exec call is started: inside bubblewrap, or under the reaper when there is no sandbox.

In both, nothing the command starts outlives the call, a stop, a timeout, or catbuddy itself:

- **sandboxed**: bwrap with ``--unshare-pid`` and ``--die-with-parent``. The command's processes live in a
  PID namespace of their own; when the command exits, bwrap's init exits and the kernel kills everything
  left in the namespace (`cmd &`, `setsid cmd` included). bwrap asks for SIGKILL when catbuddy dies, which
  takes the namespace down with it, whatever signal killed catbuddy.
- **unsandboxed**: ``reaper.py`` (a child subreaper with a parent-death signal), see there.

The sandbox: the whole filesystem read-only; the work root (workspace-write) and a private /tmp writable,
plus ``sandbox_writable``; catbuddy's homes and the project's `.catbuddy/` read-only even inside the work
root; credential stores in the home directory (~/.ssh, ~/.aws, ~/.netrc, …) hidden; a fresh /dev and
/proc; /run hidden (docker and D-Bus sockets); no network unless ``sandbox_network``; every capability
dropped (also when catbuddy runs as root).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from catbuddy.sandbox.status import READ_ONLY, WORKSPACE_WRITE, SandboxStatus
from catbuddy.workspace import PROJECT_CONFIG, catbuddy_homes

REAPER = Path(__file__).with_name("reaper.py")
SANDBOX_TMP = "/tmp"
# Credential stores under the home directory, hidden from sandboxed commands (whose output goes to the
# model); a path listed in `sandbox_writable` is given back.
CREDENTIAL_PATHS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".kube", ".docker",
    ".netrc", ".git-credentials", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".vault-token", ".password-store", ".terraform.d/credentials.tfrc.json",
)
_private_tmp: list[str] = []
PRIVATE_TMP_PREFIX = "catbuddy-sandbox-"  # then the owning process id and a random tail


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    sandboxed: bool


def private_tmp() -> str:
    """This process's private /tmp for sandboxed commands (kept across calls). Removed by
    ``remove_private_tmp()`` on every exit path (``exit_now`` skips atexit on purpose); one left by a
    process that was killed is removed by the next catbuddy that makes its own."""
    if not _private_tmp or not os.path.isdir(_private_tmp[0]):
        remove_stale_private_tmps()
        made = tempfile.mkdtemp(prefix=f"{PRIVATE_TMP_PREFIX}{os.getpid()}-")
        _private_tmp[:] = [made]
        atexit.register(shutil.rmtree, made, True)  # an ordinary interpreter exit (tests, embedders)
    return _private_tmp[0]


def remove_private_tmp() -> None:
    """Remove this process's private /tmp, if it made one (the sandboxed commands have ended)."""
    if _private_tmp:
        shutil.rmtree(_private_tmp.pop(), ignore_errors=True)


def remove_stale_private_tmps(parent: str | None = None) -> None:
    """Remove the private /tmp of catbuddy processes that no longer exist (killed before cleaning)."""
    parent = parent or tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if not entry.name.startswith(PRIVATE_TMP_PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            owner = entry.name[len(PRIVATE_TMP_PREFIX) :].split("-", 1)[0]
            if owner.isdigit() and not _alive(int(owner)):
                shutil.rmtree(entry.path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def plan(command: str, *, status: SandboxStatus, work_root: Path, home: Path) -> LaunchPlan:
    if status.active and status.bwrap:
        return LaunchPlan(bwrap_argv(status, command, work_root=work_root, home=home), True)
    return LaunchPlan(reaper_argv(command), False)


def reaper_argv(command: str) -> list[str]:
    if not sys.executable or not REAPER.is_file():
        return ["bash", "-c", command]  # no interpreter path to start the supervisor with: plain group kill
    return [sys.executable, "-I", "-S", str(REAPER), str(os.getpid()), "--", "bash", "-c", command]


def bwrap_argv(status: SandboxStatus, command: str, *, work_root: Path, home: Path) -> list[str]:
    assert status.bwrap is not None
    root = str(work_root.resolve())
    argv = [
        status.bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
    ]
    if not status.network:
        argv.append("--unshare-net")
    argv += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if os.path.isdir("/run"):
        argv += ["--tmpfs", "/run"]  # docker.sock, D-Bus: a read-only mount does not stop connect()
        if status.network:
            argv += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    argv += ["--bind", private_tmp(), SANDBOX_TMP]
    for needed in tools_under_tmp():
        argv += ["--ro-bind", needed, needed]  # the private /tmp would hide them
    homes = _existing(catbuddy_homes(home))
    writable: list[str] = []
    if status.mode == WORKSPACE_WRITE:
        argv += ["--bind", root, root]
        for extra in status.writable:
            path = _expand(extra)
            if path and not any(path == str(h) or Path(path).is_relative_to(h) for h in homes):
                writable.append(path)
                argv += ["--bind-try", path, path]
    elif status.mode == READ_ONLY:
        argv += ["--ro-bind", root, root]  # visible even when it lives under the (private) /tmp
    else:
        raise ValueError(f"unknown sandbox mode {status.mode!r}")
    argv += _hide_credentials(writable)  # after the work root: it may be the home directory itself
    project_dir = (work_root / PROJECT_CONFIG).parent
    for protected in [*homes, *_existing([project_dir])]:
        argv += ["--ro-bind", str(protected), str(protected)]
    argv += ["--chdir", root, "--setenv", "TMPDIR", SANDBOX_TMP, "--", "bash", "-c", command]
    return argv


def tools_under_tmp(path_variable: str | None = None) -> list[str]:
    """Host directories under /tmp that commands need: PATH entries (a virtual environment created under
    /tmp is given back whole, so its ``lib/`` comes with its ``bin/``) and this interpreter's prefix."""
    entries = (os.environ.get("PATH", "") if path_variable is None else path_variable).split(os.pathsep)
    found: list[str] = []
    for entry in [*entries, sys.prefix]:
        if not entry or not os.path.isabs(entry):
            continue
        try:
            real = Path(entry).resolve()
        except (OSError, RuntimeError):
            continue
        if not real.is_relative_to(SANDBOX_TMP) or not real.is_dir() or real == Path(SANDBOX_TMP):
            continue
        if (real.parent / "pyvenv.cfg").is_file():
            real = real.parent
        text = str(real)
        if not any(text == kept or real.is_relative_to(kept) for kept in found):
            found = [kept for kept in found if not Path(kept).is_relative_to(real)] + [text]
    return found


def _hide_credentials(given_back: list[str]) -> list[str]:
    argv: list[str] = []
    user_home = Path.home()
    for relative in CREDENTIAL_PATHS:
        path = user_home / relative
        text = str(path)
        if any(text == kept or text.startswith(kept.rstrip("/") + "/") for kept in given_back):
            continue
        if path.is_dir() and not path.is_symlink():
            argv += ["--tmpfs", text]
        elif path.is_file() and not path.is_symlink():
            argv += ["--ro-bind", "/dev/null", text]
    return argv


def _existing(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            continue
        if real.is_dir() and real not in out:
            out.append(real)
    return out


def _expand(path: str) -> str:
    expanded = os.path.expanduser(os.path.expandvars(path))
    if not os.path.isabs(expanded):
        return ""
    try:
        return str(Path(expanded).resolve())
    except (OSError, RuntimeError):
        return ""
