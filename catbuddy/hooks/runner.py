"""Running hooks: each matching `[hooks.<name>]` command runs under bash in the work root, in its own
process group, with the event as JSON on stdin (`event`, `session_id`, `work_root`, and `tool`,
`arguments`, `result` where they apply). Off the event loop: an asyncio subprocess.

Exit 0 lets the step go on (a `user_prompt_submit` hook's output is added to the message as context);
exit 2 blocks it, and the hook's stderr is the reason the model (or, for a prompt, the user) is given;
any other exit is a failing hook, reported and otherwise ignored. A hook still running at its timeout is
killed (its whole process group) and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from catbuddy.config import HookSettings

BLOCK_EXIT = 2  # Claude Code's convention: exit 2 blocks the step, stderr says why
OUTPUT_LIMIT = 16 * 1024  # characters of a hook's stdout/stderr kept
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL for a hook past its timeout


@dataclass
class HookResult:
    blocked: bool = False
    reason: str = ""  # the blocking hooks' stderr, joined
    context: list[str] = field(default_factory=list)  # exit-0 output (user_prompt_submit adds it)
    problems: list[str] = field(default_factory=list)  # failed or timed-out hooks, for a notice
    blocked_by: str = ""


class HookRunner:
    def __init__(self, hooks: Mapping[str, HookSettings], work_root: Path, env: Mapping[str, str]) -> None:
        self.hooks = list(hooks.values())
        self.work_root = work_root
        self.env = dict(env)

    def matching(self, event: str, tool: str | None = None) -> list[HookSettings]:
        return [
            hook
            for hook in self.hooks
            if hook.event == event and (tool is None or not hook.matcher or re.fullmatch(hook.matcher, tool))
        ]

    async def run(self, event: str, payload: Mapping[str, Any], tool: str | None = None) -> HookResult:
        """Every hook of ``event`` (for ``tool``) in order; the first that blocks ends the run."""
        outcome = HookResult()
        for hook in self.matching(event, tool):
            data = json.dumps({"event": event, "hook": hook.name, "work_root": str(self.work_root), **payload},
                              ensure_ascii=False, default=str)  # fmt: skip
            code, out, err, timed_out = await self._run_one(hook, data)
            if timed_out:
                outcome.problems.append(
                    f"hook {hook.name} ({event}) took longer than {hook.timeout:g} s and was killed"
                )
            elif code == BLOCK_EXIT:
                outcome.blocked = True
                outcome.blocked_by = hook.name
                outcome.reason = err.strip() or out.strip() or f"blocked by hook {hook.name}"
                return outcome
            elif code != 0:
                tail = f": {err.strip()[-300:]}" if err.strip() else ""
                outcome.problems.append(f"hook {hook.name} ({event}) failed with exit {code}{tail}")
            elif out.strip():
                outcome.context.append(out.strip())
        return outcome

    async def _run_one(self, hook: HookSettings, data: str) -> tuple[int, str, str, bool]:
        try:
            process = await asyncio.create_subprocess_exec(
                "bash", "-c", hook.command, cwd=self.work_root, env=self.env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return 127, "", f"cannot start: {exc}", False
        try:
            out, err = await asyncio.wait_for(process.communicate(data.encode()), hook.timeout)
        except TimeoutError:
            await _kill(process)
            return -1, "", "", True
        except asyncio.CancelledError:  # the turn was stopped: the hook goes with it
            await asyncio.shield(_kill(process))
            raise
        text = (out.decode("utf-8", "replace")[:OUTPUT_LIMIT], err.decode("utf-8", "replace")[:OUTPUT_LIMIT])
        return process.returncode or 0, text[0], text[1], False


async def _kill(process: asyncio.subprocess.Process) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), KILL_GRACE)
            return
        except TimeoutError:
            continue
