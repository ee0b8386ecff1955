"""Safety for tools: the path guard for file tools, deny patterns for commands, and the approval policy.

Deny patterns are checked on every simple command of a compound command (see ``commands.analyze``)
in every approval mode, yolo included. A command that cannot be parsed is never silently allowed:
the policy asks, and a front end that cannot ask refuses it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.config_schema import APPROVAL_MODES
from catbuddy.tools.base import Tool, ToolError, ToolKind
from catbuddy.tools.commands import PRIVILEGE_WRAPPERS, Analysis, Segment, analyze

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.tools.base import ToolContext
    from catbuddy.workspace import Workspace

ALLOW, ASK, DENY = "allow", "ask", "deny"
SESSION_DIR_NAME = "projects"  # under the catbuddy home: the session files

# `rm -r` or `chmod -R` on these is never what a coding task needs.
DANGEROUS_TARGETS = {"/", "/*", "~", "~/", "~/*", "$HOME", "${HOME}", "$HOME/*", "${HOME}/*", ".."}
SYSTEM_DIRS = {
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib64",
    "opt",
    "proc",
    "root",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
}
BLOCK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop)")
POWER_COMMANDS = {"shutdown", "reboot", "halt", "poweroff"}
FORMAT_COMMANDS = re.compile(r"^(mkfs(\..*)?|mke2fs|mkswap|wipefs)$")
FORK_BOMB = re.compile(r"([A-Za-z_:.][\w:.]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*&?\s*\1\s*&")
# Commands that delete or move what they are given (an ancestor of the session files counts too),
# and commands that write to what they are given (or to their last operand).
DELETING_COMMANDS = {"rm", "rmdir", "unlink", "shred", "mv"}
WRITING_COMMANDS = {"tee", "truncate", "touch", "chmod", "chown", "chgrp"}
DESTINATION_COMMANDS = {"cp", "install", "ln", "rsync"}
IN_PLACE_COMMANDS = {"sed", "perl"}  # only with -i


@dataclass(frozen=True)
class GuardDecision:
    action: str  # "allow", "ask" or "deny"
    reason: str = ""
    suggested_pattern: str | None = None


# --- paths ------------------------------------------------------------------------------------------


def protected_dirs(home: Path | None) -> list[Path]:
    """Where catbuddy keeps session files: the configured home's, $CATBUDDY_HOME's and ~/.catbuddy's."""
    from catbuddy.workspace import default_home

    homes = [Path.home() / ".catbuddy", default_home()] + ([home] if home is not None else [])
    seen: list[Path] = []
    for item in homes:
        path = (item / SESSION_DIR_NAME).expanduser().resolve()
        if path not in seen:
            seen.append(path)
    return seen


def agent_owned_paths(ctx: ToolContext) -> list[Path]:
    """Outside the work root, the files the `memory` and `my` skills tell the model to maintain:
    the global workspace (USER.md, MEMORY.md, skills/) and the global config.toml."""
    home = ctx.workspace.home
    return [(home / "workspace").resolve(), (home / "config.toml").resolve()]


def _expand_catbuddy_home(path: str, home: Path) -> str:
    """`~/.catbuddy/...` means catbuddy's home, also when CATBUDDY_HOME moved it."""
    if path == "~/.catbuddy" or path.startswith("~/.catbuddy/"):
        return str(home) + path[len("~/.catbuddy") :]
    return os.path.expanduser(path)


def resolve_path(ctx: ToolContext, path: Any, *, for_write: bool) -> Path:
    """The real path a file tool may use, or a ToolError saying why not."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError('`path` must be a non-empty string, e.g. "src/main.py" (relative to the work root).')
    root = ctx.work_root.resolve()
    candidate = Path(_expand_catbuddy_home(path.strip(), ctx.workspace.home))
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()  # `..` and symlinks, so a link cannot lead outside
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, a symlink loop
        raise ToolError(f"{path!r} is not a usable path ({exc}).") from None
    allowed = [root, *agent_owned_paths(ctx)]
    if not ctx.settings.tools.allow_outside_work_root and not any(
        resolved == place or resolved.is_relative_to(place) for place in allowed
    ):
        raise ToolError(
            f"{path} resolves to {resolved}, which is outside the work root {root}. Use a path inside "
            "the work root (set `tools.allow_outside_work_root = true` in config.toml to allow others)."
        )
    if for_write:
        for protected in protected_dirs(ctx.workspace.home):
            if resolved == protected or resolved.is_relative_to(protected):
                raise ToolError(
                    f"{path} is one of catbuddy's session files; they are never written by tools."
                )
    return resolved


def display_path(ctx: ToolContext, path: Path) -> str:
    """A path as the model should write it back: relative to the work root when inside it."""
    root = ctx.work_root.resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) and path != root else str(path)


# --- deny patterns ----------------------------------------------------------------------------------


class CommandChecker:
    """Built-in and configured deny patterns, applied to each simple command."""

    def __init__(
        self, extra_patterns: Iterable[str] = (), home: Path | None = None, work_root: Path | None = None
    ):
        self.extra: list[re.Pattern[str]] = []
        for pattern in extra_patterns:
            try:
                self.extra.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"tools.deny_patterns: {pattern!r} is not a valid regex ({exc})") from None
        self.protected = protected_dirs(home)
        self.work_root = work_root or Path.cwd()
        self.home = home

    def check(self, command: str) -> tuple[Analysis, str | None]:
        """The analysis and, if any segment is denied, the reason."""
        analysis = analyze(command)
        if FORK_BOMB.search(command):
            return analysis, "a fork bomb"
        for segment in analysis.segments:
            reason = self.segment_reason(segment)
            if reason:
                return analysis, reason
        if not analysis.parsed:
            # Best effort on a rough split, so an unparsable command still cannot hide a denied one.
            for line in re.split(r"[;&|\n]+", command):
                words = [w.strip("'\"") for w in line.split()]
                reason = self.segment_reason(Segment(words)) if words else None
                if reason:
                    return analysis, reason
        return analysis, None

    def segment_reason(self, seg: Segment) -> str | None:
        name, args = seg.name, seg.args
        options = [a for a in args if a.startswith("-")]
        targets = _operands(args)
        recursive = any(
            o in ("--recursive", "-R") or (not o.startswith("--") and ("r" in o or "R" in o)) for o in options
        )
        if name == "rm":
            if "--no-preserve-root" in options:
                return "rm --no-preserve-root"
            if recursive and any(_dangerous_target(t) for t in targets):
                return f"recursive rm of {next(t for t in targets if _dangerous_target(t))}"
        if name in ("chmod", "chown", "chgrp") and recursive and any(_dangerous_target(t) for t in targets):
            return f"recursive {name} on a system or home directory"
        if FORMAT_COMMANDS.match(name):
            return f"formatting a filesystem ({name})"
        if name in POWER_COMMANDS or (name == "systemctl" and set(args) & {*POWER_COMMANDS, "kexec"}):
            return f"{name}: shutting down or rebooting the machine"
        if name == "init" and args[:1] in (["0"], ["6"]):
            return "init 0/6: shutting down the machine"
        if name == "dd" and any(a.startswith("of=") and BLOCK_DEVICE.match(a[3:]) for a in args):
            return "dd onto a block device"
        for op, target in seg.redirects:
            if ">" in op and BLOCK_DEVICE.match(target):
                return f"writing to the block device {target}"
            if ">" in op and self._is_session_path(target, deleting=False):
                return "writing to catbuddy's session files"
        if name == "tee" and any(BLOCK_DEVICE.match(t) for t in targets):
            return "writing to a block device"
        if self._touches_sessions(seg, targets):
            return "changing or deleting catbuddy's session files"
        text = seg.text()
        for pattern in self.extra:
            if pattern.search(text):
                return f"matches the configured deny pattern {pattern.pattern!r}"
        return None

    def _touches_sessions(self, seg: Segment, targets: list[str]) -> bool:
        name, args = seg.name, seg.args
        if name == "dd":
            return any(a.startswith("of=") and self._is_session_path(a[3:], deleting=False) for a in args)
        if name in DELETING_COMMANDS:
            return any(self._is_session_path(t, deleting=True) for t in targets)
        if name in WRITING_COMMANDS:
            return any(self._is_session_path(t, deleting=False) for t in targets)
        if name in DESTINATION_COMMANDS and targets:
            deleting = name == "rsync" and any(a.startswith("--delete") for a in args)
            return self._is_session_path(targets[-1], deleting=deleting)
        if name in IN_PLACE_COMMANDS and any(a.startswith("-i") or a == "--in-place" for a in args):
            return any(self._is_session_path(t, deleting=False) for t in targets)
        if name == "find" and {"-delete", "-exec", "-execdir", "-ok"} & set(args):
            roots = [a for a in args[: next((i for i, a in enumerate(args) if a.startswith("-")), len(args))]]
            return any(self._is_session_path(r, deleting=True) for r in roots)
        return False

    def _is_session_path(self, word: str, *, deleting: bool) -> bool:
        if not word:
            return False
        prefix = re.split(r"[*?\[]", word, maxsplit=1)[0]  # a glob touches what its fixed part names
        globbed = prefix != word
        expanded = _expand_home(prefix, self.home)
        path = Path(expanded)
        if not path.is_absolute():
            path = self.work_root / path
        candidates = {Path(os.path.normpath(path))}
        try:
            candidates.add(path.resolve())
        except (OSError, RuntimeError):
            pass
        for protected in self.protected:
            for candidate in candidates:
                if candidate == protected or candidate.is_relative_to(protected):
                    return True
                # deleting or moving an ancestor takes the session files with it
                if deleting and protected.is_relative_to(candidate) and candidate != Path("/"):
                    return True
                if globbed and str(protected).startswith(str(candidate)):
                    return True
        return False


def _operands(args: list[str]) -> list[str]:
    if "--" in args:
        index = args.index("--")
        return [a for a in args[:index] if not a.startswith("-")] + args[index + 1 :]
    return [a for a in args if not a.startswith("-")]


def _dangerous_target(target: str) -> bool:
    cleaned = re.sub(r"/+", "/", target)
    if cleaned in DANGEROUS_TARGETS or cleaned.rstrip("/") in DANGEROUS_TARGETS:
        return True
    stripped = cleaned.rstrip("/*")
    if stripped in ("", "~", "$HOME", "${HOME}", "/."):
        return True
    parts = stripped.strip("/").split("/")
    return cleaned.startswith("/") and len(parts) == 1 and parts[0] in SYSTEM_DIRS


def _expand_home(word: str, home: Path | None) -> str:
    if home is not None:
        word = re.sub(r"^\$\{?CATBUDDY_HOME\}?", str(home), word)
    word = re.sub(r"^\$\{?HOME\}?", str(Path.home()), word)
    return os.path.expanduser(word)


# --- approval ---------------------------------------------------------------------------------------


class ApprovalPolicy:
    """Decides, per call, whether a tool runs, asks first, or is refused."""

    def __init__(self, mode: str, settings: Settings, workspace: Workspace | None = None) -> None:
        self.mode = mode
        self.settings = settings
        self.workspace = workspace
        self.remembered: set[str] = set(settings.tools.allow_commands)
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

    def remember(self, pattern: str) -> None:
        """Allow later calls matching ``pattern`` (a command's first word, or a tool name) this session."""
        if pattern:
            self.remembered.add(pattern.strip())

    def decide(self, tool: Tool, args: dict[str, Any]) -> GuardDecision:
        override = getattr(tool, "approval_override", None)
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

    def _decide_edit(self, tool: Tool, args: dict[str, Any], override: str | None) -> GuardDecision:
        path = args.get("path")
        if isinstance(path, str) and self.checker._is_session_path(path.strip(), deleting=False):
            return GuardDecision(DENY, "writing to catbuddy's session files is never allowed")
        if override == "auto" or self.mode in ("auto-edit", "yolo") or tool.name in self.remembered:
            return GuardDecision(ALLOW, suggested_pattern=tool.name)
        return GuardDecision(ASK, f"{tool.name} changes files", suggested_pattern=tool.name)

    def _decide_exec(self, command: str, override: str | None) -> GuardDecision:
        if not command.strip():
            return GuardDecision(ASK, "empty command", suggested_pattern=None)
        analysis, reason = self.checker.check(command)
        first = analysis.segments[0].name if analysis.segments else None
        if reason:
            return GuardDecision(DENY, f"refused: {reason}", suggested_pattern=None)
        if override == "deny":
            return GuardDecision(DENY, "exec is set to deny in the configuration")
        if not analysis.parsed:
            return GuardDecision(ASK, f"could not parse the command safely ({analysis.problem})", first)
        if override == "auto" or self.mode == "yolo":
            return GuardDecision(ALLOW, suggested_pattern=first)
        unknown = [s for s in analysis.segments if not self._remembered_segment(s)]
        if not unknown:
            return GuardDecision(ALLOW, suggested_pattern=first)
        return GuardDecision(ASK, f"runs `{unknown[0].name}`", suggested_pattern=unknown[0].name or first)

    def _remembered_segment(self, segment: Segment) -> bool:
        if set(segment.wrappers) & PRIVILEGE_WRAPPERS or not segment.words:
            return False  # remembering `pytest` must not allow `sudo pytest`
        text = " ".join([segment.name, *segment.args])
        return any(text == p or text.startswith(p + " ") for p in self.remembered)
