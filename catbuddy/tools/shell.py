"""The exec tool: one bash command in the work root, inside the OS sandbox when one is available.

``bash -c`` rather than ``bash -lc``: a login shell sources the user's profile files on every call,
which is slow, may print banners or change directory, and makes results differ between machines.
The environment catbuddy was started with is passed through, minus every secret (catbuddy.sandbox.
environment), so PATH and virtualenvs still work but API keys do not reach the command.

Nothing the command starts outlives the call (catbuddy.sandbox.launch): in the sandbox its PID namespace
dies with it; without one, a subreaper supervisor kills what is left. On timeout and when the awaiting
task is cancelled (Esc / stop, SIGTERM), the process group gets SIGTERM, then SIGKILL after a grace
period; if catbuddy itself dies, by any signal, the kernel tells bwrap or the supervisor to clean up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from catbuddy import sandbox
from catbuddy.context.compaction.ledger_exec import (
    file_removals,
    is_test_command,
    output_tail,
    runner_verdict,
)
from catbuddy.safety.deny import CommandChecker
from catbuddy.safety.kinds import ToolKind
from catbuddy.safety.protected import ProtectedPlaces
from catbuddy.sandbox.classify import sandbox_note
from catbuddy.sandbox.environment import exec_environment
from catbuddy.sandbox.launch import plan
from catbuddy.tool_meta import Change, FactKind, LedgerFact, PathChange, ToolMeta, ToolStatus
from catbuddy.tools.base import Preview, PreviewKind, Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.output import HeadTailBuffer

EXEC_MAX_OUTPUT_CHARS = 30_000
KILL_GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL
PIPE_DRAIN_SECONDS = 1.0  # after the command exits, how long stray children may keep the pipe open
READ_CHUNK = 65_536
POLL_SECONDS = 0.05  # how often we look whether the command has exited (after the first second)
FAST_POLL_SECONDS = 0.01


class ExecTool(Tool):
    name = "exec"
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line."},
            "timeout": {"type": "number", "description": "Seconds before the command is killed. Default 60."},
        },
        "required": ["command"],
    }
    kind = ToolKind.EXEC
    microcompactable = True

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        return Preview(str(args.get("command", "")), PreviewKind.COMMAND)

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        """The command and how it ended (the ledger reads status and exit code from ``meta``); a test
        command also as a test run, with the runner's verdict, once it ran."""
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return []
        tail = meta.extra.get("tail")
        facts = [LedgerFact(FactKind.COMMAND, command, tail if isinstance(tail, str) else "")]
        ran = meta.exit_code is not None or meta.status is ToolStatus.TIMED_OUT
        if ran and is_test_command(command):
            verdict = meta.extra.get("verdict")
            facts.append(LedgerFact(FactKind.TEST, command, verdict if isinstance(verdict, str) else ""))
        return facts

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError("`command` must be a non-empty string.")
        settings = ctx.settings
        # The approval policy checked this already; checking again keeps exec safe on its own.
        checker = CommandChecker(
            settings.tools.deny_patterns, home=ctx.workspace.home, work_root=ctx.work_root
        )
        verdict = await asyncio.to_thread(checker.check, command)
        if verdict.deny:
            raise ToolError(f"Refused: {verdict.deny}. This command is blocked in every approval mode.")
        timeout, note = _timeout(
            args.get("timeout"), settings.tools.exec_timeout, settings.tools.exec_max_timeout
        )
        status = await asyncio.to_thread(sandbox.status, settings)
        launch = plan(command, status=status, work_root=ctx.work_root, home=ctx.workspace.home)
        environment = exec_environment(
            os.environ,
            key_variables=settings.key_variables(),
            secrets=settings.held_secrets(),
            allow=settings.sandbox.env_allow,
        )
        ran = await run_command(launch.argv, str(ctx.work_root), timeout, env=environment.env)
        result = command_result(ran, timeout, note)
        _add_facts(result, command, ran.output)
        result.meta["sandbox"] = status.label
        if launch.sandboxed:
            own = [str(p) for p in ProtectedPlaces.of(ctx.workspace.home, ctx.work_root).homes]
            own.append(str(ctx.work_root / ".catbuddy"))
            extra = sandbox_note(result.content, result.exit_code, status, own, str(ctx.work_root))
            if extra:
                result.content += "\n" + extra
        return result


def _timeout(value: Any, default: int, maximum: int) -> tuple[float, str]:
    if value is None:
        return float(default), ""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ToolError(f"`timeout` must be a positive number of seconds (at most {maximum}), got {value!r}.")
    if value > maximum:
        return float(maximum), f"(timeout capped at {maximum} s)"
    return float(value), ""


@dataclass(frozen=True)
class CommandRun:
    """How a command ended, and its output (head and tail, cut to ``EXEC_MAX_OUTPUT_CHARS``)."""

    output: str
    code: int | None
    timed_out: bool
    detached: bool  # background processes still held the output open when it ended
    elapsed: float


def _add_facts(result: ToolResult, command: str, output: str) -> None:
    """What the ledger keeps of a command: a failing one's output tail, a test runner's verdict line,
    and the files a plain `rm`/`mv` that succeeded removed (best effort, docs/architecture.md §5)."""
    if result.outcome is not ToolStatus.OK:
        result.meta["tail"] = output_tail(output)
    if is_test_command(command):
        result.meta["verdict"] = runner_verdict(output)
    if result.outcome is ToolStatus.OK:
        result.paths = [
            PathChange(path, Change.DELETED, moved_to=moved_to or "")
            for path, moved_to in file_removals(command)
        ]


async def run_command(
    argv: list[str], cwd: str, timeout: float, *, env: dict[str, str] | None = None
) -> CommandRun:
    """Run ``argv`` (bwrap, the supervisor, or bash) in its own session and process group."""
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env if env is not None else dict(os.environ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so we can kill every child
        )
    except OSError as exc:
        raise ToolError(f"Could not start {argv[0]}: {exc}") from None
    buffer = HeadTailBuffer()
    reader = asyncio.create_task(_pump(proc, buffer))
    timed_out = False
    detached = False
    try:
        if not await _exited(proc, timeout):
            timed_out = True
            await kill_group(proc)
        try:
            # Background children (`server &`) may hold the pipe open after bash exits.
            await asyncio.wait_for(asyncio.shield(reader), PIPE_DRAIN_SECONDS)
        except TimeoutError:
            detached = True
            reader.cancel()
            _release_pipe(proc)
    except asyncio.CancelledError:
        reader.cancel()
        await asyncio.shield(kill_group(proc))
        raise
    elapsed = time.monotonic() - started
    output = buffer.text(EXEC_MAX_OUTPUT_CHARS).rstrip("\n")
    return CommandRun(output, proc.returncode, timed_out, detached, elapsed)


def _release_pipe(proc: asyncio.subprocess.Process) -> None:
    """Close our end of the output pipe that a background child still holds (bash itself is gone).

    asyncio has no public call for this; without it the transport lingers until the loop closes."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def _pump(proc: asyncio.subprocess.Process, buffer: HeadTailBuffer) -> None:
    assert proc.stdout is not None
    while chunk := await proc.stdout.read(READ_CHUNK):
        buffer.feed(chunk)


async def kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is left after a grace period."""
    pgid = proc.pid  # start_new_session: the group id is the leader's pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    await _exited(proc, KILL_GRACE_SECONDS)
    # Children that ignore SIGTERM (or outlived bash) go now.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    await _exited(proc, KILL_GRACE_SECONDS)
    await _group_gone(pgid, KILL_GRACE_SECONDS)


async def _group_gone(pgid: int, timeout: float) -> None:
    """Give the kernel time to finish off the group's other members (on a busy machine a killed child
    may not have run its exit yet when bash is already gone). Zombies count as gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_is_live_member(pid, pgid) for pid in _pids()):
            return
        await asyncio.sleep(POLL_SECONDS / 4)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc (macOS): nothing to wait for
        return []


def _is_live_member(pid: int, pgid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    # "pid (comm) state ppid pgrp ..."; comm may contain spaces or parentheses, so split after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the command exits within ``timeout``. Polled, because ``Process.wait()`` also waits for the
    pipes to close, which a background child (`server &`) can hold open indefinitely. The first polls
    are close together: most commands end within milliseconds."""
    started = time.monotonic()
    deadline = started + timeout
    delay = 0.002
    while proc.returncode is None:
        now = time.monotonic()
        if now >= deadline:
            return False
        await asyncio.sleep(min(delay, max(deadline - now, 0)))
        delay = min(delay * 1.5, FAST_POLL_SECONDS if now - started < 1.0 else POLL_SECONDS)
    return True


def command_result(run: CommandRun, timeout: float, note: str = "") -> ToolResult:
    """What the model reads: the output, a blank line, then how the command ended."""
    code, timed_out = run.code, run.timed_out
    lines = [run.output if run.output else "(no output)", ""]
    if timed_out:
        lines.append(f"Timed out after {timeout:g} s; the command and its children were killed.")
    elif code is not None and code < 0:
        lines.append(f"Killed by signal {-code} ({_signal_name(-code)}).")
    elif code is not None and code > 128 and _signal_name(code - 128) != "unknown signal":
        lines.append(f"Exit code: {code} (128 + {_signal_name(code - 128)}: killed by a signal)")
    else:
        lines.append(f"Exit code: {code}")
    if run.detached:
        lines.append("Background processes still held the output open; their later output is not shown.")
    if note:
        lines.append(note)
    meta = {"exit_code": code, "timed_out": timed_out, "elapsed": round(run.elapsed, 3)}
    if timed_out:
        status = ToolStatus.TIMED_OUT
    else:
        status = ToolStatus.OK if code == 0 else ToolStatus.ERROR
    return ToolResult("\n".join(lines), meta=meta, status=status, exit_code=None if timed_out else code)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"
