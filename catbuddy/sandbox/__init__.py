"""The OS sandbox for `exec`: bubblewrap on Linux, the exec environment policy, and containment of every
process an exec call starts (see ``launch``). ``status(settings)`` says what is in force;
``describe(settings)`` says it in one line for `catbuddy doctor`, `/context` and the approval dialog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from catbuddy.sandbox.status import OFF, READ_ONLY, SANDBOX_MODES, WORKSPACE_WRITE, SandboxStatus, status_for

if TYPE_CHECKING:
    from catbuddy.config import Settings

__all__ = [
    "OFF", "READ_ONLY", "SANDBOX_MODES", "WORKSPACE_WRITE", "SandboxStatus", "describe", "startup_notice", "status",
]


def status(settings: Settings) -> SandboxStatus:
    return status_for(settings.sandbox)


def describe(settings: Settings) -> str:
    return status(settings).describe()


def startup_notice(settings: Settings) -> str | None:
    """What a front end should say once at start-up, or None when commands are sandboxed as configured."""
    current = status(settings)
    if current.fallback:
        return (
            f"The exec sandbox is unavailable: {current.problem}. Commands run unsandboxed, and every one asks "
            "for approval first (headless: refused)."
        )
    if current.mode == OFF:
        return 'Commands run unsandboxed (sandbox = "off"), with your full permissions.'
    return None
