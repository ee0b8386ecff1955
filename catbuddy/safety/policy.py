"""The approval policy: whether a tool call runs, asks first, or is refused (the file tools' path guard,
which shares ``real_path`` with it, is tools/paths.py).

The policy decides with the parsed command (``safety.shell_parse``) and the sandbox in force:

- the deny rules (``safety.deny``) refuse in every mode, yolo included;
- a write to catbuddy's own files (``safety.protected``) asks every time, is never remembered and never
  automatic, and the tool refuses it without that one approval;
- without a sandbox that was wanted (bubblewrap missing or unable to start), every command asks;
- a command whose effect cannot be determined statically (a computed command name, `eval` of built text,
  code piped into a shell or interpreter, …) is never auto-approved: it asks in `ask`/`auto-edit`, and
  in `yolo` it runs only inside the sandbox;
- "allow for this session" remembers a parsed command prefix (`git status`), matched word by word
  against each simple command, never a string a later command can extend.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.config_checks import APPROVAL_MODES
from catbuddy.safety.deny import CommandChecker, Verdict
from catbuddy.safety.kinds import ApprovalSubject, ToolKind
from catbuddy.safety.protected import SESSION, ProtectedPlaces, describe

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.safety.shell_parse import Segment
    from catbuddy.sandbox import SandboxStatus
    from catbuddy.workspace import Workspace

ALLOW, ASK, DENY = "allow", "ask", "deny"
# `NAME=value cmd` with these changes what `cmd` loads or runs: a remembered `cmd` does not cover it.
LOADER_VARIABLES = frozenset(
    {"PATH", "BASH_ENV", "ENV", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5OPT", "RUBYOPT",
     "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "SHELLOPTS", "IFS"}
)
# Programs whose first word is a subcommand: "allow for this session" remembers `git status`, not `git`.
SUBCOMMAND_PROGRAMS = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3", "uv", "poetry",
     "dotnet", "gh", "apt", "apt-get", "brew", "systemctl", "terraform", "helm", "rustup", "bun", "deno",
     "conda", "mvn", "gradle", "just", "tox", "nox", "hatch", "pdm", "rye", "mix", "composer", "bundle"}
)


@dataclass(frozen=True)
class GuardDecision:
    action: str  # "allow", "ask" or "deny"
    reason: str = ""
    suggested_pattern: str | None = None  # what "allow for this session" remembers; None: it cannot
    grant: Path | None = None  # a protected file this one call may write once the user says yes
    sandbox: str = ""  # exec only: the sandbox the command runs in (SandboxStatus.label)
    headless: str = ""  # what to tell the model when nobody can be asked ('' : the usual refusal)

    @property
    def rememberable(self) -> bool:
        return bool(self.suggested_pattern)


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
        self.remembered: set[str] = set()  # tool names
        self.prefixes: set[tuple[str, ...]] = set()  # parsed command prefixes
        for entry in settings.tools.allow_commands:
            self.remember(entry)
        self.checker = CommandChecker(
            settings.tools.deny_patterns,
            home=workspace.home if workspace else None,
            work_root=workspace.work_root if workspace else None,
        )

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
        """Allow later calls this session: a tool name, or a command prefix such as `git status`,
        parsed into words (a prefix matches whole words of one simple command, nothing else)."""
        pattern = (pattern or "").strip()
        if not pattern:
            return
        self.remembered.add(pattern)
        try:
            words = tuple(shlex.split(pattern))
        except ValueError:
            return
        if words:
            self.prefixes.add(words)

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

    def _decide_edit(self, tool: ApprovalSubject, args: dict[str, Any], override: str | None) -> GuardDecision:
        target = self._protected_target(args.get("path"))
        if target is not None:
            kind, path = target
            if kind == SESSION:
                return GuardDecision(DENY, "writing to catbuddy's session files is never allowed")
            reason = f"{tool.name} writes {describe(kind, path)}; catbuddy asks for every such write"
            return GuardDecision(
                ASK, reason, None, grant=path,
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
        if not command.strip():
            return GuardDecision(ASK, "empty command")
        verdict = self.checker.check(command)
        if verdict.deny:
            return GuardDecision(DENY, f"refused: {verdict.deny}")
        if override == "deny":
            return GuardDecision(DENY, "exec is set to deny in the configuration")
        sandbox = self.sandbox
        label = sandbox.label
        if verdict.protect:
            return GuardDecision(
                ASK, f"{verdict.protect}; catbuddy asks for every such command", None, sandbox=label,
                headless=f"Refused: {verdict.protect}, which only the user can approve, one call at a time, and "
                "this run is headless. Tell the user what to change instead.",
            )
        if sandbox.fallback:
            return GuardDecision(
                ASK, f"no sandbox ({sandbox.problem}); every command asks", None, sandbox=label,
                headless=f"Refused: commands cannot be sandboxed here ({sandbox.problem}), so each one needs the "
                "user's approval, and this run is headless. Tell the user.",
            )
        dynamic = verdict.dynamic
        automatic = override == "auto" or self.mode == "yolo"
        if dynamic:
            if automatic and sandbox.active:
                return GuardDecision(ALLOW, f"runs inside the sandbox: {dynamic[0]}", None, sandbox=label)
            where = "" if sandbox.active else " and there is no sandbox to contain it"
            return GuardDecision(
                ASK, f"catbuddy cannot tell what it runs: {dynamic[0]}{where}", None, sandbox=label,
                headless=f"Refused: catbuddy cannot tell what this command runs ({dynamic[0]}){where}, so it "
                "needs the user's approval, and this run is headless. Write it with literal command names "
                "and arguments instead.",
            )
        unknown = self._unremembered(verdict)
        first = _suggestion(unknown[0]) if unknown else None
        if automatic or not unknown:
            return GuardDecision(ALLOW, suggested_pattern=first, sandbox=label)
        return GuardDecision(ASK, f"runs `{unknown[0].name or unknown[0].source}`", first, sandbox=label)

    def _unremembered(self, verdict: Verdict) -> list[Segment]:
        return [s for s in verdict.parsed.segments if not s.container and not self._remembered_segment(s)]

    def _remembered_segment(self, segment: Segment) -> bool:
        # Like the parser, imported at the first command checked rather than at start-up.
        from catbuddy.safety.shell_programs import PRIVILEGE_WRAPPERS

        if segment.rough or segment.dynamic or segment.inline_code is not None or not segment.words:
            return False
        if set(segment.wrappers) & PRIVILEGE_WRAPPERS:
            return False  # remembering `pytest` must not allow `sudo pytest`
        if any(name in LOADER_VARIABLES or name.startswith(("LD_", "DYLD_")) for name in segment.assignments):
            return False
        words = [w.static for w in segment.words]
        for prefix in self.prefixes:
            if len(prefix) <= len(words) and all(words[i] == part for i, part in enumerate(prefix)):
                return True
        return False


def _suggestion(segment: Segment) -> str | None:
    """The prefix "allow for this session" would remember for ``segment``; None if it cannot be one."""
    from catbuddy.safety.shell_programs import interpreter_family  # loaded by the first check already

    if segment.rough or segment.dynamic or segment.inline_code is not None or not segment.words:
        return None
    words = [w.static for w in segment.words]
    if words[0] is None:
        return None
    tokens = [words[0]]
    rest = words[1:]
    name = os.path.basename(words[0])
    if interpreter_family(name) is not None:
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] is not None:
            tokens += ["-m", rest[1]]
        elif rest and rest[0] is not None and not rest[0].startswith("-"):
            tokens.append(rest[0])
    elif name in SUBCOMMAND_PROGRAMS and rest and rest[0] is not None and not rest[0].startswith("-"):
        tokens.append(rest[0])
    return shlex.join(tokens)
