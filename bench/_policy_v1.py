"""The exec approval decision as it was before issue 27 (main at 9d86edb, catbuddy/safety/policy.py), kept
only as the same-run baseline for bench/bench_approvals.py: deny rules, then whole-word remembered prefixes
with no look at flags; no known-safe commands, no destructive class."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from catbuddy.safety.deny import CommandChecker, Verdict
from catbuddy.safety.readonly import LOADER_VARIABLES, SUBCOMMAND_PROGRAMS
from catbuddy.safety.shell_programs import PRIVILEGE_WRAPPERS, interpreter_family
from catbuddy.sandbox import SandboxStatus

ALLOW, ASK, DENY = "allow", "ask", "deny"


class OldExecPolicy:
    def __init__(self, mode: str, settings: Any, work_root: Path, home: Path, sandbox: SandboxStatus) -> None:
        self.mode = mode
        self.sandbox = sandbox
        self.prefixes: set[tuple[str, ...]] = set()
        for entry in settings.tools.allow_commands:
            self.remember(entry)
        self.checker = CommandChecker(settings.tools.deny_patterns, home=home, work_root=work_root)

    def remember(self, pattern: str) -> None:
        words = tuple(shlex.split(pattern))
        if words:
            self.prefixes.add(words)

    def decide(self, command: str) -> tuple[str, str | None]:
        """(action, suggested pattern)."""
        if not command.strip():
            return ASK, None
        verdict = self.checker.check(command)
        if verdict.deny:
            return DENY, None
        if verdict.protect or self.sandbox.fallback:
            return ASK, None
        automatic = self.mode == "yolo"
        if verdict.dynamic:
            return (ALLOW if automatic and self.sandbox.active else ASK), None
        unknown = self._unremembered(verdict)
        first = _suggestion(unknown[0]) if unknown else None
        if automatic or not unknown:
            return ALLOW, first
        return ASK, first

    def _unremembered(self, verdict: Verdict) -> list[Any]:
        return [s for s in verdict.parsed.segments if not s.container and not self._remembered(s)]

    def _remembered(self, segment: Any) -> bool:
        if segment.rough or segment.dynamic or segment.inline_code is not None or not segment.words:
            return False
        if set(segment.wrappers) & PRIVILEGE_WRAPPERS:
            return False
        if any(n in LOADER_VARIABLES or n.startswith(("LD_", "DYLD_")) for n in segment.assignments):
            return False
        words = [w.static for w in segment.words]
        return any(
            len(p) <= len(words) and all(words[i] == part for i, part in enumerate(p)) for p in self.prefixes
        )


def _suggestion(segment: Any) -> str | None:
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
