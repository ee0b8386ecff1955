"""The supervisor of an unsandboxed exec: no process it starts outlives the call or catbuddy.

Run as ``python -I -S reaper.py PARENT_PID -- bash -c COMMAND`` (standard library only, so it starts in a
few milliseconds). It makes itself a *child subreaper* (PR_SET_CHILD_SUBREAPER), so every descendant that is
orphaned — `cmd &`, `setsid cmd`, a double fork — is re-parented to it rather than to init and stays
findable; and it asks the kernel for SIGTERM when catbuddy dies (PR_SET_PDEATHSIG), also when catbuddy is
killed with SIGKILL. When the command exits, or on SIGTERM/SIGINT/SIGHUP, it terminates every descendant
(SIGTERM, then SIGKILL after a grace period), reaps them, and exits with the command's status (a command
killed by a signal makes it die by the same signal). No cgroups and no privileges are needed.
"""

from __future__ import annotations

# The C module: `signal` would import `enum`, doubling this supervisor's start-up time.
import _signal as signal
import ctypes
import os
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
END_GRACE_SECONDS = 0.5  # background children left when the command ends
STOP_GRACE_SECONDS = 1.0  # on a stop or timeout; shorter than catbuddy's own grace before SIGKILL
POLL_SECONDS = 0.02


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (through /proc); being a subreaper, orphans are still below it."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _has_children() -> bool:
    """Being a subreaper, any live descendant is a child of ours or below one; no child means none."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def _terminate_tree(grace: float) -> None:
    if not _has_children():
        return
    me = os.getpid()
    for pid in _descendants(me):
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _descendants(me):
        _reap()
        time.sleep(POLL_SECONDS)
    for _ in range(50):  # SIGKILL until none is left (a process may fork while we kill)
        left = _descendants(me)
        if not left:
            break
        for pid in left:
            _signal(pid, signal.SIGKILL)
        _reap()
        time.sleep(POLL_SECONDS / 4)
    _reap()


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _on_signal(signum: int, frame: object) -> None:
    # SIGTERM and SIGHUP stop the command as SIGINT does by default. A builtin, not an exception class of
    # our own: this script runs on the standard library alone (`-I -S`), outside catbuddy's errors.
    raise KeyboardInterrupt(signum)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: reaper.py PARENT_PID -- COMMAND [ARG ...]\n")
        return 2
    parent = int(argv[0])
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # catbuddy died before we could ask to be told
        return 128 + signal.SIGTERM
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    command = argv[2:]
    stopped = False
    try:
        child = os.fork()
        if child == 0:
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            try:
                os.execvp(command[0], command)
            except OSError as exc:
                sys.stderr.write(f"cannot run {command[0]}: {exc}\n")
            os._exit(127)
        status = _wait_for(child)
    except KeyboardInterrupt:  # a stop signal (_on_signal)
        stopped, status = True, 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # already cleaning up; catbuddy's SIGKILL ends a hang
    _terminate_tree(STOP_GRACE_SECONDS if stopped else END_GRACE_SECONDS)
    if stopped:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP keep their default anyway
        os.kill(os.getpid(), sig)  # die the way the command died
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _wait_for(child: int) -> int:
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
