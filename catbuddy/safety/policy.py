"""The approval policy: whether a tool call runs, asks first, or is refused (the file tools' path guard,
which shares ``real_path`` with it, is tools/paths.py).

- read-only tools never ask; edits ask in `ask` mode; a write to catbuddy's own files (``safety.protected``)
  asks every time, is never remembered and never automatic, and the tool refuses it without that approval;
- exec is decided on the parsed command and the sandbox in force (``safety.exec_decision``): deny rules,
  known-safe read-only commands that run unasked, destructive forms that always ask, flag-aware remembered
  approvals, and a one-line reason for every decision.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.config_checks import APPROVAL_MODES
from catbuddy.safety.decision import ALLOW, ASK, DENY, GuardDecision
from catbuddy.safety.deny import CommandChecker
from catbuddy.safety.kinds import ApprovalSubject, ToolKind
from catbuddy.safety.protected import SESSION, ProtectedPlaces, describe

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.safety.exec_decision import ExecRules
    from catbuddy.sandbox import SandboxStatus
    from catbuddy.workspace import Workspace

__all__ = [
    "ALLOW",
    "ASK",
    "DENY",
    "ApprovalPolicy",
    "GuardDecision",
    "real_path",
]


def __getattr__(name: str) -> Any:
    """LOADER_VARIABLES and SUBCOMMAND_PROGRAMS lived here before the read-only rules (loaded on demand)."""
    if name in ("LOADER_VARIABLES", "SUBCOMMAND_PROGRAMS"):
        from catbuddy.safety import readonly

        return getattr(readonly, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- paths (shared with the file tools' guard, tools/paths.py) -------------------------------------


def _expand_catbuddy_home(path: str, home: Path) -> str:
    """`~/.catbuddy/...` means catbuddy's home, also when CATBUDDY_HOME moved it."""
    if path == "~/.catbuddy" or path.startswith("~/.catbuddy/"):
        return str(home) + path[len("~/.catbuddy") :]
    return os.path.expanduser(path)


def real_path(path: str, root: Path, home: Path) -> Path:
    """The real path ``path`` names, from ``root``: `~/.catbuddy` is the home, `..` and symlinks resolved.
    A path that cannot be resolved raises ValueError (the file tools say it as a ToolError)."""
    candidate = Path(_expand_catbuddy_home(path.strip(), home))
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        return candidate.resolve()  # `..` and symlinks, so a link cannot lead outside
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        raise ValueError(f"{path!r} is not a usable path ({exc}).") from None


# --- approval ---------------------------------------------------------------------------------------


class ApprovalPolicy:
    """Decides, per call, whether a tool runs, asks first, or is refused."""

    def __init__(
        self,
        mode: str,
        settings: Settings,
        workspace: Workspace | None = None,
        *,
        sandbox: SandboxStatus | None = None,
    ) -> None:
        self.mode = mode
        self.settings = settings
        self.workspace = workspace
        self._sandbox = sandbox
        self.remembered: set[str] = set()  # tool names and command patterns, as given
        self.checker = CommandChecker(
            settings.tools.deny_patterns,
            home=workspace.home if workspace else None,
            work_root=workspace.work_root if workspace else None,
        )
        self._commands: ExecRules | None = None  # built at the first command: the rules load with it
        self._patterns: list[str] = []  # command patterns remembered before that
        for entry in settings.tools.allow_commands:
            self.remember(entry)

    @property
    def commands(self) -> ExecRules:
        """The exec rules and the session's remembered commands (imported at the first command)."""
        if self._commands is None:
            from catbuddy.safety.exec_decision import ExecRules

            self._commands = ExecRules(
                self.settings, self.checker, self.checker.work_root, self.checker.user_home
            )
            for pattern in self._patterns:
                self._commands.remember(pattern)
        return self._commands

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in APPROVAL_MODES:
            raise ValueError(f"approval mode must be one of {', '.join(APPROVAL_MODES)}, got {value!r}")
        self._mode = value

    @property
    def sandbox(self) -> SandboxStatus:
        """The sandbox exec runs in; probed on first use (bwrap is started once to check)."""
        if self._sandbox is None:
            from catbuddy.sandbox import status

            self._sandbox = status(self.settings)
        return self._sandbox

    def remember(self, pattern: str) -> None:
        """Allow later calls this session: a tool name, or a command prefix such as `git log`, which covers
        the forms of that command that do no more than its own (or the asked) form: `git log` covers its
        read-only forms, not `git log --output=x` (``safety.remembered``)."""
        pattern = (pattern or "").strip()
        if not pattern:
            return
        self.remembered.add(pattern)
        if self._commands is None:
            self._patterns.append(pattern)
        else:
            self._commands.remember(pattern)

    def decide(self, tool: ApprovalSubject, args: dict[str, Any]) -> GuardDecision:
        override = tool.approval_override
        if tool.kind is ToolKind.EXEC:
            return self._decide_exec(str(args.get("command", "")), override)
        if override == "deny":
            return GuardDecision(DENY, f"{tool.name} is set to deny in the configuration")
        if tool.kind is ToolKind.EDIT:
            return self._decide_edit(tool, args, override)
        if tool.kind in (ToolKind.READ, ToolKind.NETWORK) and override != "ask":
            return GuardDecision(ALLOW)
        if override == "auto" or self.mode == "yolo" or tool.name in self.remembered:
            return GuardDecision(ALLOW, suggested_pattern=tool.name)
        return GuardDecision(ASK, f"{tool.name} needs approval", suggested_pattern=tool.name)

    # --- edits ------------------------------------------------------------------------------------

    def _decide_edit(
        self, tool: ApprovalSubject, args: dict[str, Any], override: str | None
    ) -> GuardDecision:
        target = self._protected_target(args.get("path"))
        if target is not None:
            kind, path = target
            if kind == SESSION:
                return GuardDecision(DENY, "writing to catbuddy's session files is never allowed")
            reason = f"{tool.name} writes {describe(kind, path)}; catbuddy asks for every such write"
            return GuardDecision(
                ASK,
                reason,
                None,
                grant=path,
                headless=f"Refused: {tool.name} would write {describe(kind, path)}, which only the user can "
                "approve, one call at a time, and this run is headless. Tell the user what to change instead.",
            )
        if override == "auto" or self.mode in ("auto-edit", "yolo") or tool.name in self.remembered:
            return GuardDecision(ALLOW, suggested_pattern=tool.name)
        return GuardDecision(ASK, f"{tool.name} changes files", suggested_pattern=tool.name)

    def _protected_target(self, path: Any) -> tuple[str, Path] | None:
        if self.workspace is None or not isinstance(path, str) or not path.strip():
            return None
        try:
            resolved = real_path(path, self.workspace.work_root.resolve(), self.workspace.home)
        except ValueError:
            return None  # the tool refuses it and says why
        kind = ProtectedPlaces.of(self.workspace.home, self.workspace.work_root).classify(resolved)
        return (kind, resolved) if kind else None

    # --- commands ---------------------------------------------------------------------------------

    def _decide_exec(self, command: str, override: str | None) -> GuardDecision:
        return self.commands.decide(command, override, self.mode, self.sandbox)
