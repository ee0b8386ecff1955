"""Remembered approvals ("allow for this session" and `tools.allow_commands`), aware of flags.

A remembered entry is a parsed command prefix (`git log`) plus the most its approved form does: a
prefix of a curated program remembers its read-only forms only (``Effect.READ``), so `git log
--output=x`, `find . -delete`, `sed 's/x/y/e'` or `rg --pre cmd` ask again after `git log`, `find`,
`sed` or `rg` were allowed; a program catbuddy does not understand flag by flag (`pytest`, `npm run`) is
remembered for any form. Destructive forms (``safety.destructive``) are never covered by one.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from catbuddy.safety.readonly import LOADER_VARIABLES, Form, segment_form
from catbuddy.safety.readonly_base import Effect

if TYPE_CHECKING:
    from catbuddy.safety.shell_model import Segment

FORMS_IN_WORDS = {
    Effect.READ: "read-only forms",
    Effect.WRITE: "forms that read or write files, not ones that run other programs",
    Effect.EXEC: "any form except destructive ones",
}


@dataclass(frozen=True)
class RememberedCommand:
    words: tuple[str, ...]  # the prefix: `git log`
    effect: Effect  # the most a covered command may do

    def describe(self) -> str:
        """What is remembered, in words: "git log, read-only forms"."""
        return f"{shlex.join(self.words)}, {FORMS_IN_WORDS[self.effect]}"

    def covers(self, segment: Segment, form: Form) -> bool:
        from catbuddy.safety.destructive import privilege  # the parser is loaded by then

        if segment.rough or segment.dynamic or segment.inline_code is not None or not segment.words:
            return False
        if privilege(segment):
            return False  # remembering `pytest` must not allow `sudo pytest`
        if any(n in LOADER_VARIABLES or n.startswith(("LD_", "DYLD_")) for n in segment.assignments):
            return False
        words = [w.static for w in segment.words]
        if len(self.words) > len(words) or any(words[i] != part for i, part in enumerate(self.words)):
            return False
        return form.effect <= self.effect


def remembered_command(pattern: str, work_root: Path, home: str) -> RememberedCommand | None:
    """The entry a pattern such as `git log` stands for: its words, and what its own form does."""
    try:
        words = tuple(shlex.split(pattern))
    except ValueError:
        return None
    if not words:
        return None
    from catbuddy.safety.shell_parse import parse_command

    parsed = parse_command(shlex.join(words), home=home, cwd=str(work_root))
    segments = [s for s in parsed.segments if not s.container]
    if not parsed.parsed or len(segments) != 1:
        return RememberedCommand(words, Effect.EXEC)
    form = segment_form(segments[0])
    return RememberedCommand(words, form.effect if form.understood else Effect.EXEC)


def describe_pattern(pattern: str, work_root: Path | None = None) -> str:
    """What "allow for this session" with ``pattern`` remembers, in words (for the approval dialog)."""
    entry = remembered_command(pattern, work_root or Path.cwd(), str(Path.home()))
    return entry.describe() if entry else pattern
