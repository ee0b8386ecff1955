"""What the read-only rules share: a command's ``Effect`` (reads, writes, runs), a rule's ``Ruling``, and
option parsing helpers (short clusters such as `-nrz`, `--long=value`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum


class Effect(IntEnum):
    """What a command may do, ordered: a remembered form covers later forms of the same or lower effect."""

    READ = 0  # reads files and prints; changes nothing
    WRITE = 1  # writes or deletes files (in the sandbox: only in the work root and /tmp)
    EXEC = 2  # runs other programs or code, or cannot be understood: may do anything


@dataclass(frozen=True)
class Ruling:
    effect: Effect
    why: str  # what makes it that, e.g. "`--output` writes a file"
    subcommand: str | None = None


Rule = Callable[[list[str]], Ruling]

READ = Ruling(Effect.READ, "reads only")
UNKNOWN_ARGUMENT = Ruling(Effect.EXEC, "an argument is only known when it runs")


def short_letters(arg: str, takes_value: str) -> str:
    """The option letters of a short cluster (`-nrz`), up to the first that takes the rest as its value."""
    if not arg.startswith("-") or arg.startswith("--") or arg == "-":
        return ""
    out = ""
    for letter in arg[1:]:
        out += letter
        if letter in takes_value:
            break
    return out


def long_option(arg: str, *names: str) -> bool:
    """Whether ``arg`` is one of the long options ``names``, with or without `=value` — or an abbreviation
    of one, since GNU getopt and git accept any unambiguous prefix (`sort --outp=x` is `--output=x`)."""
    given = arg.split("=", 1)[0]
    return len(given) > 2 and given.startswith("--") and any(name.startswith(given) for name in names)


def operands(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]
