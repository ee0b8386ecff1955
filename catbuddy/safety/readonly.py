"""Known-safe commands: a command line that only reads, judged on the parsed line (``shell_parse``).

A line is known safe when every simple command it runs — in pipelines, `&&`/`||`/`;` chains, substitutions
and `bash -lc '…'` wrappers alike — is a curated read-only program used in a read-only form
(``readonly_rules``), with no redirection that writes a file (`2>/dev/null` is fine), no privilege wrapper,
no loader variable (`PATH=… ls`), nothing computed at run time and no code handed to an interpreter.

``is_known_safe(command, work_root)`` is the stable entry point (plan mode uses it); ``explain_read_only``
says why a line is or is not read-only; ``segment_form`` gives what one simple command does, which the
approval policy remembers ("git log, read-only forms").
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from catbuddy.safety.readonly_rules import Effect, ruling

if TYPE_CHECKING:
    from catbuddy.safety.shell_model import ParsedCommand, Segment

__all__ = [
    "LOADER_VARIABLES",
    "line_forms",
    "Effect",
    "Form",
    "ReadOnlyVerdict",
    "explain_read_only",
    "is_known_safe",
    "segment_form",
]

# `NAME=value cmd` with these changes what `cmd` loads or runs.
LOADER_VARIABLES = frozenset(
    {
        "PATH",
        "BASH_ENV",
        "ENV",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5LIB",
        "PERL5OPT",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "SHELLOPTS",
        "IFS",
        "GIT_PAGER",
        "PAGER",
        "GIT_EXTERNAL_DIFF",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_GLOBAL",
        "EDITOR",
        "LESSOPEN",
        "LESSCLOSE",
        "RIPGREP_CONFIG_PATH",
    }
)
# Wrappers that change how a command runs, not what it does (privilege wrappers are told apart elsewhere).
HARMLESS_WRAPPERS = frozenset(
    {"timeout", "nice", "ionice", "stdbuf", "command", "builtin", "xargs", "env", "chronic", "unbuffer"}
)
NULL_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
# Programs whose first word is a subcommand: "allow for this session" remembers `npm run`, not `npm`.
SUBCOMMAND_PROGRAMS = frozenset(
    {
        "git",
        "npm",
        "pnpm",
        "yarn",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "dotnet",
        "gh",
        "apt",
        "apt-get",
        "brew",
        "systemctl",
        "terraform",
        "helm",
        "rustup",
        "bun",
        "deno",
        "conda",
        "mvn",
        "gradle",
        "just",
        "tox",
        "nox",
        "hatch",
        "pdm",
        "rye",
        "mix",
        "composer",
        "bundle",
    }
)


@dataclass(frozen=True)
class Form:
    """What one simple command does: its program, subcommand and effect, and why."""

    program: str
    subcommand: str | None
    effect: Effect
    why: str
    understood: bool = True  # the program's flags are known (a curated program)

    @property
    def name(self) -> str:
        return f"{self.program} {self.subcommand}" if self.subcommand else self.program

    @property
    def read_only(self) -> bool:
        return self.effect is Effect.READ


@dataclass(frozen=True)
class ReadOnlyVerdict:
    safe: bool
    reason: str  # one line: "read-only: git log, wc" or why not
    forms: list[Form] = field(default_factory=list)


def _first_operand(segment: Segment) -> str | None:
    for word in segment.args:
        value = word.static
        if value is None:
            return None
        if not value.startswith("-"):
            return value
    return None


def _writes(segment: Segment) -> str | None:
    """The first redirection that writes a file (`> out.txt`), as written; `2>/dev/null` is not one."""
    for op, target in segment.redirects:
        writes = ">" in op or op == "<>"
        if writes and (target.dynamic or any(v not in NULL_DEVICES for v in target.values)):
            return f"{op} {target.values[0]}"
    return None


def segment_form(segment: Segment) -> Form:
    """What ``segment`` does: READ only for a curated program in a read-only form, with nothing around it
    (a writing redirection, a privilege or unknown wrapper, a loader variable) that changes that."""
    from catbuddy.safety.shell_programs import PRIVILEGE_WRAPPERS  # loaded with the parser already

    if segment.rough:
        return Form(segment.source.split(" ")[0], None, Effect.EXEC, "it could not be parsed", False)
    written = _writes(segment)
    if not segment.words:
        return Form("", None, Effect.WRITE, f"`{written}` writes a file")
    name = segment.name
    if not name:
        return Form(segment.words[0].source, None, Effect.EXEC, "its name is computed when it runs", False)
    subcommand = _first_operand(segment) if os.path.basename(name) in SUBCOMMAND_PROGRAMS else None
    privileged = sorted(set(segment.wrappers) & PRIVILEGE_WRAPPERS)
    if privileged:
        return Form(name, subcommand, Effect.EXEC, f"`{privileged[0]}` runs it with root privileges", False)
    other = [w for w in segment.wrappers if w not in HARMLESS_WRAPPERS]
    loader = [
        n for n in segment.assignments if n in LOADER_VARIABLES or n.startswith(("LD_", "DYLD_", "GIT_"))
    ]
    if segment.dynamic or segment.inline_code is not None:
        why = segment.dynamic[0] if segment.dynamic else f"`{name}` runs code given inline"
        return Form(name, subcommand, Effect.EXEC, why, False)
    found = ruling(name, segment.args) if "/" not in (segment.words[0].static or "") else None
    if found is None:  # not curated, or a program named by path (`./git` is not git)
        return Form(name, subcommand, Effect.EXEC, f"runs `{name}`", False)
    subcommand = found.subcommand or subcommand
    if loader:
        return Form(name, subcommand, Effect.EXEC, f"`{loader[0]}=…` changes what `{name}` loads or runs")
    if other:
        return Form(name, subcommand, Effect.EXEC, f"`{other[0]}` runs it in a way catbuddy does not follow")
    if written and found.effect is Effect.READ:
        return Form(name, subcommand, Effect.WRITE, f"`{written}` writes a file")
    return Form(name, subcommand, found.effect, found.why)


def loader_assignment(parsed: ParsedCommand) -> str | None:
    """A variable the line sets that changes what later commands load or run (`PATH=/tmp/x; ls`)."""
    found = sorted(
        n for n in parsed.assigned if n in LOADER_VARIABLES or n.startswith(("LD_", "DYLD_", "GIT_"))
    )
    return found[0] if found else None


def line_forms(parsed: ParsedCommand) -> list[tuple[Segment, Form]]:
    """Every simple command that runs (a `bash -c` or `eval` is judged by what it runs) with its form; after
    `PATH=…;` or `export LD_PRELOAD=…` in the line, no command is understood any more."""
    loader = loader_assignment(parsed)
    out = []
    for segment in parsed.segments:
        if segment.container:
            continue
        form = segment_form(segment)
        if loader is not None:
            why = f"`{loader}=…` in the line changes what `{form.name or 'it'}` loads or runs"
            form = Form(form.program, form.subcommand, Effect.EXEC, why, False)
        out.append((segment, form))
    return out


def command_forms(parsed: ParsedCommand) -> list[Form]:
    return [form for _, form in line_forms(parsed)]


def explain_read_only(
    command: str, work_root: Path, *, parsed: ParsedCommand | None = None
) -> ReadOnlyVerdict:
    """Whether ``command`` only reads, and why in one line."""
    if parsed is None:
        from catbuddy.safety.shell_parse import parse_command

        root = os.path.normpath(Path(work_root).absolute())
        parsed = parse_command(command, home=str(Path.home()), cwd=root)
    if not parsed.parsed:
        return ReadOnlyVerdict(False, f"it could not be parsed ({parsed.problem or 'syntax error'})")
    if parsed.fork_bomb:
        return ReadOnlyVerdict(False, parsed.fork_bomb)
    dynamic = parsed.dynamic_reasons()
    if dynamic:
        return ReadOnlyVerdict(False, f"catbuddy cannot tell what it runs: {dynamic[0]}")
    forms = command_forms(parsed)
    if not forms:  # only assignments or comments
        return ReadOnlyVerdict(bool(command.strip()), "read-only: it runs no command", forms)
    for form in forms:
        if not form.read_only:
            return ReadOnlyVerdict(False, f"{form.name or 'a redirection'}: {form.why}", forms)
    names = ", ".join(dict.fromkeys(f.name for f in forms))
    return ReadOnlyVerdict(True, f"read-only: {names}", forms)


def is_known_safe(command: str, work_root: Path) -> bool:
    """True when every command ``command`` runs only reads (see the module docstring); never raises."""
    try:
        return explain_read_only(command, work_root).safe
    except Exception:  # an analysis failure is never a reason to run something unasked
        return False
