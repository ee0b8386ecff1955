"""`catbuddy doctor`: what protects the user here, checked rather than assumed.

It starts a real sandboxed `true` with the binds a command in this work root would get, lists the
environment variables exec drops (names only), and says whether the project's risky settings apply.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from typing import Any

from catbuddy import sandbox
from catbuddy.config import Settings
from catbuddy.sandbox.environment import exec_environment
from catbuddy.sandbox.launch import plan
from catbuddy.workspace import Workspace, catbuddy_homes

CHECK_TIMEOUT_SECONDS = 15.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checks": [c.to_json() for c in self.checks]}

    def to_text(self) -> str:
        width = max(len(c.name) for c in self.checks)
        lines = []
        for check in self.checks:
            mark = "ok " if check.ok else "!! "
            detail = check.detail.replace("\n", "\n" + " " * (width + 6))
            lines.append(f"{mark} {check.name.ljust(width)}  {detail}")
        lines.append("")
        lines.append("All good." if self.ok else "Something needs fixing (marked !!).")
        return "\n".join(lines)


def diagnose(workspace: Workspace, settings: Settings) -> Report:
    report = Report()
    status = sandbox.status(settings)
    report.checks.append(Check("sandbox", not status.fallback, status.describe()))
    if status.active:
        report.checks.append(_try_sandbox(status, workspace))
        report.checks.append(Check("read-only", True, "\n".join(_read_only_places(workspace))))
    environment = exec_environment(
        os.environ,
        key_variables=settings.key_variables(),
        secrets=settings.held_secrets(),
        allow=settings.sandbox.env_allow,
    )
    dropped = ", ".join(environment.dropped) if environment.dropped else "nothing here looks secret"
    allowed = f"; let through by exec_env_allow: {', '.join(settings.sandbox.env_allow)}" if settings.sandbox.env_allow else ""
    report.checks.append(Check("exec environment", True, f"dropped: {dropped}{allowed}"))
    approval_from = settings.origins.get("approval", "the default")  # where it was set, not every source
    report.checks.append(Check("approval", True, f"{settings.approval} (set by {approval_from})"))
    report.checks.append(_grammar())
    report.checks.append(_trust(settings))
    return report


def _try_sandbox(status: sandbox.SandboxStatus, workspace: Workspace) -> Check:
    launch = plan("true", status=status, work_root=workspace.work_root, home=workspace.home)
    try:
        done = subprocess.run(
            launch.argv, cwd=workspace.work_root, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=CHECK_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("sandbox start", False, f"a sandboxed command could not start: {exc}")
    if done.returncode != 0:
        first = (done.stderr or done.stdout).strip().splitlines()[:1]
        return Check("sandbox start", False, f"a sandboxed `true` failed: {first[0] if first else done.returncode}")
    return Check("sandbox start", True, f"a sandboxed `true` ran in {workspace.work_root}")


def _read_only_places(workspace: Workspace) -> list[str]:
    places = [str(home) for home in catbuddy_homes(workspace.home) if home.is_dir()]
    project = workspace.project_dir
    if project.is_dir():
        places.append(f"{project} (the project's catbuddy files: edit them with the file tools)")
    return list(dict.fromkeys(places))


def _grammar() -> Check:
    try:
        from catbuddy.safety.shell_parse import bash_parser

        bash_parser()
    except Exception as exc:
        return Check("bash grammar", False, f"tree-sitter-bash cannot load ({exc}): every command will ask")
    return Check("bash grammar", True, "tree-sitter-bash: commands are parsed, not pattern-matched")


def _trust(settings: Settings) -> Check:
    project = settings.project_trust
    if project is None:
        return Check("project trust", True, "the project config has no settings that need trust")
    if project.applied:
        return Check("project trust", True, f"trusted: {', '.join(project.keys)} ({project.config_path})")
    return Check("project trust", True, project.warning())
