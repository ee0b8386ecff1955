"""Approval policies for each sandbox situation a decision depends on, without probing the machine."""

from __future__ import annotations

from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.sandbox import SandboxStatus
from catbuddy.tools.base import ToolContext

SANDBOXES = {
    "active": SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap"),
    "fallback": SandboxStatus("workspace-write", False, "bubblewrap (bwrap) is not installed"),
    "off": SandboxStatus("off", False, network=True),
}


def make_policy(ctx: ToolContext, mode: str, sandbox: str = "active") -> ApprovalPolicy:
    return ApprovalPolicy(mode, ctx.settings, ctx.workspace, sandbox=SANDBOXES[sandbox])
