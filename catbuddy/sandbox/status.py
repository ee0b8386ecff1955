"""What sandbox is in force: the configured mode, and whether bubblewrap can provide it here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from catbuddy.config_checks import SANDBOX_MODES
from catbuddy.sandbox.probe import probe

if TYPE_CHECKING:
    from catbuddy.config import SandboxSettings

WORKSPACE_WRITE, READ_ONLY, OFF = SANDBOX_MODES


@dataclass(frozen=True)
class SandboxStatus:
    mode: str  # as configured
    available: bool  # bubblewrap can start here
    problem: str = ""  # why not
    bwrap: str | None = None
    network: bool = False
    writable: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        """Commands run inside the sandbox."""
        return self.mode != OFF and self.available

    @property
    def fallback(self) -> bool:
        """A sandbox was wanted but cannot start: commands run unsandboxed and every one asks."""
        return self.mode != OFF and not self.available

    @property
    def label(self) -> str:
        """One word for the status bar and the approval dialog."""
        if self.fallback:
            return "unavailable"
        return self.mode

    def describe(self) -> str:
        """One line: what is in force and what it means for commands."""
        if self.mode == OFF:
            return 'sandbox off (sandbox = "off"): commands run unsandboxed, with your permissions'
        if self.fallback:
            return f"sandbox unavailable, commands run unsandboxed and every one asks first: {self.problem}"
        writable = "nothing but a private /tmp" if self.mode == READ_ONLY else "the work root and a private /tmp"
        if self.writable and self.mode != READ_ONLY:
            writable += ", " + ", ".join(self.writable)
        network = "network on" if self.network else "network off"
        return f"sandbox {self.mode} (bubblewrap): {writable} writable, catbuddy's home read-only, {network}"


def status_for(sandbox: SandboxSettings) -> SandboxStatus:
    if sandbox.mode == OFF:
        return SandboxStatus(OFF, False, network=True)
    found = probe()
    return SandboxStatus(sandbox.mode, found.ok, found.problem, found.bwrap, sandbox.network, sandbox.writable)
