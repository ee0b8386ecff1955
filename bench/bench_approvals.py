"""Approval decisions per exec command, against the policy before issue 27 measured in the same run.

Run: ``python bench/bench_approvals.py [--repeat 30]``. The commands are the peers' own cases
(tests/safety/peer_commands.py: Codex's and mistral-vibe's known-safe commands, not-safe commands, the
escalation probes and the destructive forms). For each command both policies decide it, interleaved, in
`auto-edit` with the sandbox in force; the figures are what each lets run unasked (known-safe commands,
escalation probes after the benign form was approved for the session, destructive forms covered by the
allow-list) and the decision time per command. Targets: ≥ 95 % of the known-safe commands run unasked (the
issue's 75 of 79), no escalation probe and no destructive form runs unasked, and a decision costs at most
twice the old one (median).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "safety"))

from _policy_v1 import OldExecPolicy  # noqa: E402
from _table import Figure, exit_status, print_table, quick, report, without_quick  # noqa: E402
from peer_commands import DESTRUCTIVE, ESCALATIONS, KNOWN_SAFE, NOT_SAFE  # noqa: E402

from catbuddy.config import Settings, ToolSettings  # noqa: E402
from catbuddy.safety.policy import ApprovalPolicy  # noqa: E402
from catbuddy.sandbox import SandboxStatus  # noqa: E402
from catbuddy.tools.shell import ExecTool  # noqa: E402
from catbuddy.workspace import Workspace  # noqa: E402

ACTIVE = SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap")
KNOWN_SAFE_SHARE = 75 / 79  # the bar: 75 of its 79 known-safe commands
TARGET_TIME_RATIO = 2.0


def new_policy(workspace: Workspace, allow: tuple[str, ...] = ()) -> ApprovalPolicy:
    settings = Settings(tools=ToolSettings(allow_commands=allow))
    return ApprovalPolicy("auto-edit", settings, workspace, sandbox=ACTIVE)


def old_policy(workspace: Workspace, allow: tuple[str, ...] = ()) -> OldExecPolicy:
    settings = Settings(tools=ToolSettings(allow_commands=allow))
    return OldExecPolicy("auto-edit", settings, workspace.work_root, workspace.home, ACTIVE)


def new_action(policy: ApprovalPolicy, command: str) -> str:
    return policy.decide(ExecTool(), {"command": command}).action


def counts(workspace: Workspace) -> dict[str, tuple[int, int]]:
    """(new, old) counts of commands each policy lets run unasked."""
    new, old = new_policy(workspace), old_policy(workspace)
    safe = (
        sum(new_action(new, c) == "allow" for c in KNOWN_SAFE),
        sum(old.decide(c)[0] == "allow" for c in KNOWN_SAFE),
    )
    escalated = [0, 0]
    for benign, probe in ESCALATIONS:  # "allow for this session" on the benign form, then the probe
        n, o = new_policy(workspace), old_policy(workspace)
        pattern = n.decide(ExecTool(), {"command": benign}).suggested_pattern or old.decide(benign)[1] or ""
        n.remember(pattern)
        o.remember(old.decide(benign)[1] or "")
        escalated[0] += new_action(n, probe) == "allow"
        escalated[1] += o.decide(probe)[0] == "allow"
    destroyed = [0, 0]
    for command, allowed, _ in DESTRUCTIVE:
        destroyed[0] += new_action(new_policy(workspace, (allowed,)), command) == "allow"
        destroyed[1] += old_policy(workspace, (allowed,)).decide(command)[0] == "allow"
    return {
        "safe": safe,
        "escalated": (escalated[0], escalated[1]),
        "destroyed": (destroyed[0], destroyed[1]),
    }


def timings(workspace: Workspace, repeat: int) -> tuple[list[float], list[float]]:
    """Microseconds per decision, every command, interleaved new/old."""
    commands = [*KNOWN_SAFE, *NOT_SAFE, *(p for _, p in ESCALATIONS), *(c for c, _, _ in DESTRUCTIVE)]
    new, old = new_policy(workspace, ("pytest", "git log")), old_policy(workspace, ("pytest", "git log"))
    for command in commands:  # warm-up: the grammar, caches
        new_action(new, command)
        old.decide(command)
    new_times: list[float] = []
    old_times: list[float] = []
    for _ in range(repeat):
        for command in commands:
            started = time.perf_counter()
            new_action(new, command)
            middle = time.perf_counter()
            old.decide(command)
            new_times.append((middle - started) * 1e6)
            old_times.append((time.perf_counter() - middle) * 1e6)
    return new_times, old_times


def main(repeat: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        (root / "notes.txt").write_text("keep me\n")
        workspace = Workspace(root.resolve(), (Path(tmp) / "home").resolve())
        found = counts(workspace)
        new_times, old_times = timings(workspace, repeat)
    safe_new, safe_old = found["safe"]
    new_median, old_median = statistics.median(new_times), statistics.median(old_times)
    p95 = [statistics.quantiles(t, n=20)[-1] for t in (new_times, old_times)]
    print_table(
        f"exec approval in auto-edit, sandbox in force ({len(new_times) // repeat} commands × {repeat} rounds)",
        ["", "this policy", "before issue 27"],
        [
            [f"known-safe run unasked (of {len(KNOWN_SAFE)})", safe_new, safe_old],
            [
                f"escalation probes allowed after a benign approval (of {len(ESCALATIONS)})",
                *found["escalated"],
            ],
            [f"destructive forms run via the allow-list (of {len(DESTRUCTIVE)})", *found["destroyed"]],
            ["decision time, median µs", round(new_median, 1), round(old_median, 1)],
            ["decision time, p95 µs", round(p95[0], 1), round(p95[1], 1)],
        ],
    )
    figures = [
        Figure(f"known-safe commands run unasked in auto-edit (of {len(KNOWN_SAFE)})", safe_new,
               "policy before issue 27", safe_old, unit="", target=math.ceil(KNOWN_SAFE_SHARE * len(KNOWN_SAFE)),
               kind="value", at_most=False),
        Figure(f"escalation probes auto-approved (of {len(ESCALATIONS)})", found["escalated"][0],
               "policy before issue 27", found["escalated"][1], unit="", target=0, kind="value"),
        Figure(f"destructive forms run via allow_commands (of {len(DESTRUCTIVE)})", found["destroyed"][0],
               "policy before issue 27", found["destroyed"][1], unit="", target=0, kind="value"),
        Figure("exec approval decision, median", new_median, "policy before issue 27, same rounds", old_median,
               unit="µs", target=TARGET_TIME_RATIO),
    ]  # fmt: skip
    return exit_status(report("bench_approvals", figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args(without_quick(sys.argv[1:]))
    raise SystemExit(main(min(args.repeat, 5) if quick() else args.repeat))
