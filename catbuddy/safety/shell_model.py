"""The result of analysing a bash command line: the simple commands it runs (``Segment``), and the state a
walk over its syntax tree carries (variables, working directories, redirections and stdin)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from catbuddy.safety import shell_programs as programs
from catbuddy.safety.shell_words import DYNAMIC_PART, Word


@dataclass
class Segment:
    """One simple command as it will run: the program first (wrappers stripped), then its arguments."""

    words: list[Word]
    redirects: list[tuple[str, Word]] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)  # e.g. ["sudo", "timeout"]
    assignments: list[str] = field(default_factory=list)  # NAME of `NAME=value cmd`
    stdin: str | None = None  # static text on stdin (heredoc, here-string, `echo … |`)
    stdin_kind: str = "none"  # none | static | pipe (another command's output) | file (`< file`)
    cwds: frozenset[str] | None = None  # the directories it may run in; None: unknown
    dynamic: list[str] = field(default_factory=list)  # why its effect cannot be determined statically
    inline_code: str | None = None  # code handed to an interpreter (`python -c`, `… | python`)
    container: bool = False  # runs only what other segments describe (`bash -c '…'`, `eval`, a function)
    output: str | None = None  # what it prints, when that is known statically (echo, printf)
    function: str | None = None  # the function whose body it is in
    rough: bool = False  # split by hand from a command the grammar could not parse
    source: str = ""

    @property
    def name(self) -> str:
        return programs.basename(self.words[0]) if self.words else ""

    @property
    def names(self) -> set[str]:
        return programs.names_of(self.words[0]) if self.words else set()

    @property
    def args(self) -> list[Word]:
        return self.words[1:]

    def text(self) -> str:
        """A normalised one-line form (quotes removed, expansions done) for configured deny patterns."""
        return self.text_variants()[0]

    def text_variants(self, limit: int = 16) -> list[str]:
        """One line per combination of the words' possible values (capped), redirections included."""
        variants = [""]
        for word in self.words:
            values = word.values[:limit] or (DYNAMIC_PART,)
            variants = [f"{v} {value}".strip() for v in variants for value in values][:limit]
        if self.words:
            variants = [" ".join([os.path.basename(v.split(" ", 1)[0]), *v.split(" ", 1)[1:]]) for v in variants]
        suffix = "".join(f" {op} {target.values[0]}" for op, target in self.redirects)
        return [(v + suffix).strip() for v in variants]


@dataclass
class ParsedCommand:
    segments: list[Segment] = field(default_factory=list)
    parsed: bool = True
    problems: list[str] = field(default_factory=list)
    fork_bomb: str | None = None
    assigned: set[str] = field(default_factory=set)  # variables the line sets (`PATH=…;`, `export`, `for`)

    @property
    def problem(self) -> str:
        return "; ".join(dict.fromkeys(self.problems))

    def dynamic_reasons(self) -> list[str]:
        reasons = [] if self.parsed else [f"it could not be parsed ({self.problem or 'syntax error'})"]
        for segment in self.segments:
            if not segment.rough:
                reasons.extend(segment.dynamic)
        return list(dict.fromkeys(reasons))


@dataclass
class WalkState:
    """What a walk knows so far: variables (every value each may hold), where it runs, functions."""

    variables: dict[str, tuple[frozenset[str], bool]] = field(default_factory=dict)
    cwds: frozenset[str] | None = None
    functions: set[str] = field(default_factory=set)

    def copy(self) -> WalkState:
        return WalkState(dict(self.variables), self.cwds, set(self.functions))


@dataclass(frozen=True)
class Plumbing:
    """What surrounds a command: redirections, and its stdin (static text, a pipe, a file, nothing)."""

    redirects: tuple[tuple[str, Word], ...] = ()
    stdin: str | None = None
    stdin_kind: str = "none"

    def with_stdin(self, text: str | None, kind: str) -> Plumbing:
        return replace(self, stdin=text, stdin_kind=kind)
