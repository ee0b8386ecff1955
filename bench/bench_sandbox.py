"""Added latency of a sandboxed exec, against an unsandboxed one measured in the same run.

Run: ``python bench/bench_sandbox.py [--repeat 40]``. Each round runs the same command through the real
exec tool three ways, interleaved so machine load hits all alike: plain ``bash -c`` in its own process
group (what exec did before the sandbox, as a floor), unsandboxed (``sandbox = "off"``: under the
subreaper supervisor that kills stray children), and sandboxed (bubblewrap, ``workspace-write``). The
commands are ``true`` and ``python3 -c pass``. Target: the sandbox adds under 30 ms per call (median)
to the unsandboxed exec.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report, unavailable, without_quick  # noqa: E402

from catbuddy.config import SandboxSettings, Settings  # noqa: E402
from catbuddy.sandbox import status_for  # noqa: E402
from catbuddy.tools.base import ToolContext  # noqa: E402
from catbuddy.tools.shell import ExecTool, run_command  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

TARGET_ADDED_MS = 30.0
COMMANDS = ("true", "python3 -c pass")


async def timed_tool(ctx: ToolContext, command: str) -> float:
    started = time.perf_counter()
    result = await ExecTool().run({"command": command}, ctx)
    elapsed = (time.perf_counter() - started) * 1000
    if result.meta.get("exit_code") != 0:
        raise SystemExit(f"{command!r} failed: {result.content}")
    return elapsed


async def timed_bash(ctx: ToolContext, command: str) -> float:
    started = time.perf_counter()
    await run_command(["bash", "-c", command], str(ctx.work_root), 60)
    return (time.perf_counter() - started) * 1000


async def main(repeat: int) -> int:
    status = status_for(SandboxSettings())
    if not status.active:
        unavailable("bench_sandbox", "sandboxed exec latency",
                    f"bubblewrap cannot start a sandbox here ({status.problem or status.mode}); "
                    "apt-get install bubblewrap")  # fmt: skip
        return 0
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        (root / ".catbuddy").mkdir(parents=True)
        (home / "projects").mkdir(parents=True)
        workspace = Workspace(root.resolve(), home.resolve())
        sandboxed = ToolContext(workspace, Settings())
        unsandboxed = ToolContext(workspace, replace(Settings(), sandbox=SandboxSettings(mode="off")))
        rows = []
        for command in COMMANDS:
            samples: dict[str, list[float]] = {"bash": [], "off": [], "sandbox": []}
            for ctx in (sandboxed, unsandboxed):  # warm-up: imports, probe, private /tmp
                await timed_tool(ctx, command)
            for _ in range(repeat):
                samples["bash"].append(await timed_bash(sandboxed, command))
                samples["off"].append(await timed_tool(unsandboxed, command))
                samples["sandbox"].append(await timed_tool(sandboxed, command))
            bash, off, boxed = (statistics.median(samples[k]) for k in ("bash", "off", "sandbox"))
            added = boxed - off
            figures += [
                Figure(f"sandbox added to exec `{command}`", added, "exec unsandboxed (supervisor), same rounds", off,
                       target=TARGET_ADDED_MS, kind="value"),
                Figure(f"sandboxed exec `{command}`", boxed, "bare bash -c (no supervisor), same rounds", bash),
            ]  # fmt: skip
            rows.append([
                command, round(bash, 1), round(off, 1), round(boxed, 1), round(added, 1),
                round(boxed / off, 2), round(boxed - bash, 1), "yes" if added < TARGET_ADDED_MS else "NO",
            ])
        print_table(
            f"exec latency, median ms of {repeat} interleaved rounds (target: sandbox adds < {TARGET_ADDED_MS:g} ms)",
            ["command", "bare bash", "unsandboxed", "sandboxed", "sandbox added", "× unsandboxed",
             "added vs bare", "on target"],
            rows,
        )
        print("unsandboxed = sandbox off, under the supervisor that kills stray children; bare bash = no "
              "supervisor (exec before the sandbox), shown as the floor.")
    return exit_status(report("bench_sandbox", figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="10 rounds")
    args = parser.parse_args(without_quick(sys.argv[1:]))
    raise SystemExit(asyncio.run(main(min(args.repeat, 10) if quick() else args.repeat)))
