"""The exec half of the approval policy: whether a command runs, asks first, or is refused, and why.

In order: the deny rules refuse in every mode; `sudo` inside the sandbox is refused (it cannot work there);
a write to catbuddy's own files asks each time; without the sandbox that was wanted every command asks; a
command whose effect cannot be determined statically asks (in `yolo` it runs only inside the sandbox); a
destructive form (``safety.destructive``) asks in `ask` and `auto-edit` whatever is remembered and runs in
`yolo`; a known-safe, read-only command (``safety.readonly``) runs unasked in `auto-edit` and `yolo`, and
in `ask` while ``tools.auto_allow_read_only`` is on and the sandbox is in force; anything else runs when
every command in it is covered by a remembered approval (``safety.remembered``), else asks.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from catbuddy.safety.decision import (
    ALLOW,
    ASK,
    DENIED,
    DENY,
    DESTRUCTIVE,
    DYNAMIC,
    OUTSIDE,
    READ_ONLY,
    WRITES,
    GuardDecision,
    explained,
    headless_refusal,
)
from catbuddy.safety.readonly import SUBCOMMAND_PROGRAMS, Form, line_forms
from catbuddy.safety.readonly_base import Effect
from catbuddy.safety.remembered import RememberedCommand, remembered_command

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.safety.deny import CommandChecker
    from catbuddy.safety.shell_model import Segment
    from catbuddy.sandbox import SandboxStatus

TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
NO_COMMAND = "it runs no command"
# Programs that write, delete or move the paths they are given (the last one, for a destination).
PATH_WRITERS = frozenset(
    {"rm", "rmdir", "unlink", "shred", "tee", "truncate", "touch", "chmod", "chown", "chgrp", "mkdir", "ln"}
)
DESTINATION_WRITERS = frozenset({"cp", "install", "rsync", "mv", "scp"})


class ExecRules:
    """Decides exec calls; owns the remembered commands of a session."""

    def __init__(self, settings: Settings, checker: CommandChecker, work_root: Path, home: str) -> None:
        self.settings = settings
        self.checker = checker
        self.work_root = work_root
        self.home = home
        self.commands: dict[tuple[str, ...], RememberedCommand] = {}
        self._pending: list[str] = []  # patterns parsed at the first command (the grammar loads lazily)
        self._offered: dict[str, Effect] = {}  # suggested patterns and what the asked form did
        self._parsed: dict[str, RememberedCommand | None] = {}

    # --- remembering ------------------------------------------------------------------------------

    def remember(self, pattern: str) -> None:
        self._pending.append(pattern)

    def entry(self, pattern: str) -> RememberedCommand | None:
        """What remembering ``pattern`` means: its own form's effect, or the asked form's if more."""
        if pattern not in self._parsed:  # a pattern's own form does not change: parse it once
            self._parsed[pattern] = remembered_command(pattern, self.work_root, self.home)
        found = self._parsed[pattern]
        if found is None:
            return None
        offered = self._offered.get(pattern, Effect.READ)
        return RememberedCommand(found.words, max(found.effect, offered))

    def _settle(self) -> None:
        pending, self._pending = self._pending, []
        for pattern in pending:
            entry = self.entry(pattern)
            if entry is None:
                continue
            known = self.commands.get(entry.words)
            if known is None or known.effect < entry.effect:
                self.commands[entry.words] = entry

    def covered(self, segment: Segment, form: Form) -> bool:
        return any(entry.covers(segment, form) for entry in self.commands.values())

    # --- deciding ---------------------------------------------------------------------------------

    def decide(self, command: str, override: str | None, mode: str, sandbox: SandboxStatus) -> GuardDecision:
        from catbuddy.safety.destructive import (  # with the parser, not at start-up
            destructive_reason,
            privilege,
        )

        if not command.strip():
            return GuardDecision(ASK, "empty command")
        verdict = self.checker.check(command)
        if verdict.deny:
            return GuardDecision(DENY, explained(DENIED, verdict.deny))
        if override == "deny":
            return GuardDecision(DENY, explained(DENIED, "exec is set to deny in the configuration"))
        label = sandbox.label
        top = [s for s in verdict.parsed.segments if not s.container]
        if verdict.protect:
            return _ask(f"{verdict.protect}; catbuddy asks for every such command", label, verdict.protect)
        if sandbox.fallback:
            return GuardDecision(
                ASK,
                f"no sandbox ({sandbox.problem}); every command asks",
                None,
                sandbox=label,
                headless=f"Refused: commands cannot be sandboxed here ({sandbox.problem}), so each one needs "
                "the user's approval, and this run is headless. Tell the user.",
            )
        automatic = override == "auto" or mode == "yolo"
        if verdict.dynamic:
            why = verdict.dynamic[0]
            if automatic and sandbox.active:
                return GuardDecision(
                    ALLOW, explained(DYNAMIC, f"runs inside the sandbox: {why}"), sandbox=label
                )
            where = "" if sandbox.active else " and there is no sandbox to contain it"
            return GuardDecision(
                ASK,
                explained(DYNAMIC, f"catbuddy cannot tell what it runs: {why}{where}"),
                None,
                sandbox=label,
                headless=f"Refused: catbuddy cannot tell what this command runs ({why}){where}, so it needs "
                "the user's approval, and this run is headless. Write it with literal command names and "
                "arguments instead.",
            )
        for segment in top:
            harm = destructive_reason(segment, self.work_root)
            if harm is None:
                continue
            root = privilege(segment)
            if root and sandbox.active:
                return _privileged_in_sandbox(root, automatic, label)
            if automatic:
                why = f"{harm}; runs in yolo mode (a turn's checkpoint, where one is kept, can undo it)"
                return GuardDecision(ALLOW, explained(DESTRUCTIVE, why), sandbox=label)
            return _ask(
                f"{DESTRUCTIVE}: {harm}; catbuddy asks every time, whatever the allow-list says", label, harm
            )
        forms = line_forms(verdict.parsed)
        names = ", ".join(dict.fromkeys(f.name for _, f in forms if f.name)) or NO_COMMAND
        read_only = all(f.read_only for _, f in forms)  # `X=1` or a comment runs nothing: read-only
        unasked = mode in ("auto-edit", "yolo") or (
            mode == "ask" and self.settings.tools.auto_allow_read_only and sandbox.active
        )
        if read_only and (unasked or automatic):
            return GuardDecision(ALLOW, explained(READ_ONLY, names), sandbox=label)
        self._settle()
        # a read-only part that would run unasked on its own needs no approval inside a longer line either
        uncovered = [(s, f) for s, f in forms if not (f.read_only and unasked) and not self.covered(s, f)]
        if automatic or not uncovered:
            return GuardDecision(ALLOW, self._kind_of(forms, sandbox, read_only), sandbox=label)
        segment, form = uncovered[0]
        pattern = suggestion(segment)
        remembers = ""
        if pattern:
            offered = form.effect if form.understood else Effect.EXEC
            self._offered[pattern] = offered  # the latest ask is the one the user answers
            entry = self.entry(pattern)
            remembers = entry.describe() if entry else ""
        reason = self._kind_of([(segment, form)], sandbox, read_only)
        if read_only:
            reason += " (asks: " + ("tools.auto_allow_read_only is off)" if sandbox.active else "no sandbox)")
        # An ordinary command keeps the usual refusal (it names the mode and how to rerun); one that writes
        # outside the work root says so.
        headless = headless_refusal(reason) if reason.startswith(OUTSIDE) else ""
        return GuardDecision(ASK, reason, pattern, sandbox=label, headless=headless, remembers=remembers)

    def _kind_of(self, forms: list[tuple[Segment, Form]], sandbox: SandboxStatus, read_only: bool) -> str:
        """The one line for a command that is neither denied, dynamic nor destructive."""
        if read_only:
            return explained(
                READ_ONLY, ", ".join(dict.fromkeys(f.name for _, f in forms if f.name)) or NO_COMMAND
            )
        for segment, form in forms:
            target = self.outside_target(segment)
            if target:
                fence = (
                    "; the sandbox lets commands write only the work root and /tmp" if sandbox.active else ""
                )
                return explained(OUTSIDE, f"`{form.name or segment.source}` writes {target}{fence}")
        segment, form = next(((s, f) for s, f in forms if not f.read_only), forms[0])
        why = form.why if form.understood else f"runs `{form.name or segment.source}`"
        if not sandbox.active:
            why += " (no sandbox: with your permissions)"
        return explained(WRITES, why)

    def outside_target(self, segment: Segment) -> str | None:
        """A path outside the work root (and /tmp) that ``segment`` writes, deletes or redirects into."""
        values = [v for op, target in segment.redirects if ">" in op for v in target.values]
        operands = [w.static for w in segment.args if w.static is not None and not w.static.startswith("-")]
        if segment.name in PATH_WRITERS:
            values += operands
        elif segment.name in DESTINATION_WRITERS and operands:
            values += operands if segment.name == "mv" else operands[-1:]
        root = str(self.work_root)
        for value in values:
            if value.startswith("/dev/"):
                continue
            value = self.home + value[1:] if value == "~" or value.startswith("~/") else value
            for cwd in sorted(segment.cwds or {root}):
                path = os.path.normpath(os.path.join(cwd, value))
                inside = path == root or path.startswith(root.rstrip("/") + "/")
                if not inside and not any(path == t or path.startswith(t + "/") for t in TEMP_DIRS):
                    return path
        return None


def _privileged_in_sandbox(root: str, automatic: bool, label: str) -> GuardDecision:
    """`sudo` inside the sandbox cannot gain privileges: refused where it would run (yolo), asked (and
    said) elsewhere, like every destructive form."""
    cannot = (
        f"`{root}` cannot work inside the sandbox (commands there run without privileges and cannot gain "
        "them); the user can run it in their own terminal"
    )
    if automatic:
        return GuardDecision(DENY, explained(DENIED, cannot), sandbox=label)
    return _ask(f"{DESTRUCTIVE}: `{root}` runs it as root; {cannot}", label, cannot)


def _ask(reason: str, label: str, why: str) -> GuardDecision:
    return GuardDecision(
        ASK,
        reason,
        None,
        sandbox=label,
        headless=f"Refused: {why}, which only the user can approve, one call at a time, and this run is "
        "headless. Tell the user what to change instead.",
    )


def suggestion(segment: Segment) -> str | None:
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
