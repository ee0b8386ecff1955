"""What well-known programs do with their arguments, for the shell analysis: wrappers that run the rest of
the line (`sudo`, `env`, `timeout`, `xargs`, `busybox`, …), shells and interpreters that run code given as
a string or on stdin, `find -exec`, and what `echo`/`printf`/`cat` print when everything is literal.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from catbuddy.safety.shell_words import Word, decode_ansi_c

ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")


@dataclass(frozen=True)
class Wrapper:
    """A program that runs the command after its own options (and ``positionals`` fixed operands)."""

    takes_value: frozenset[str] = frozenset()
    positionals: int = 0
    privileged: bool = False


def _w(values: str = "", positionals: int = 0, privileged: bool = False) -> Wrapper:
    return Wrapper(frozenset(values.split()), positionals, privileged)


WRAPPERS: dict[str, Wrapper] = {
    "sudo": _w("-u -g -C -D -h -p -r -t -U -T --user --group --chdir --host --prompt", privileged=True),
    "doas": _w("-u -C", privileged=True),
    "pkexec": _w("--user", privileged=True),
    "run0": _w("-u --user -D --chdir", privileged=True),
    "env": _w("-u --unset -C --chdir"),
    "nohup": _w(),
    "timeout": _w("-s --signal -k --kill-after", positionals=1),
    "xargs": _w("-I -n -P -d -E -L -s -a --arg-file --delimiter --max-args --max-procs --max-lines -e"),
    "command": _w(),
    "builtin": _w(),
    "exec": _w("-a"),
    "nice": _w("-n --adjustment"),
    "ionice": _w("-c -n -p -t --class --classdata"),
    "setsid": _w(),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "chronic": _w(),
    "unbuffer": _w(),
    "time": _w("-f -o --format --output"),
    "taskset": _w("-c --cpu-list", positionals=1),
    "chrt": _w(positionals=1),
    "chroot": _w("--userspec --groups", positionals=1),
    "flock": _w("-w --timeout -E --conflict-exit-code", positionals=1),
    "unshare": _w(),
    "nsenter": _w("-t --target"),
    "firejail": _w(),
    "fakeroot": _w("-l --lib -s -i"),
    "strace": _w("-e -o -p -s -u -E -a -b -I -O -S -X -P"),
    "ltrace": _w("-e -o -p -s -u -a -n"),
    "busybox": _w(),
    "toybox": _w(),
    "caffeinate": _w(),
}
PRIVILEGE_WRAPPERS = frozenset(name for name, spec in WRAPPERS.items() if spec.privileged) | {"su"}
# `uv run CMD`, `poetry run CMD`, …: a program and subcommand that run the rest of the line.
RUNNER_SUBCOMMANDS = {"uv": "run", "poetry": "run", "pipenv": "run", "bundle": "exec", "conda": "run", "pdm": "run"}
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "rbash", "tcsh", "csh"})
SHELL_VALUE_OPTIONS = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_INTERPRETER = re.compile(
    r"^(python(\d+(\.\d+)?)?|pypy\d?|perl\d*|ruby\d*(\.\d+)?|node|nodejs|php\d*(\.\d+)?|lua(\d(\.\d)?)?|luajit"
    r"|Rscript|julia|tclsh\d*(\.\d+)?|osascript|bun|deno|[gmn]?awk)$"
)
# interpreter family -> options whose value is inline code, and options whose value is something else
INLINE_CODE_OPTIONS = {
    "python": {"-c"}, "pypy": {"-c"}, "perl": {"-e", "-E"}, "ruby": {"-e"},
    "node": {"-e", "--eval", "-p", "--print"}, "php": {"-r"}, "lua": {"-e"}, "Rscript": {"-e"},
    "julia": {"-e", "--eval"}, "osascript": {"-e"}, "bun": {"-e", "--eval"},
}
VALUE_OPTIONS = {
    "python": {"-W", "-X", "-Q"}, "perl": {"-I", "-M", "-m"}, "ruby": {"-I", "-r"},
    "node": {"-r", "--require", "--import", "--loader"}, "php": {"-d", "-c"}, "awk": {"-F", "-v"},
}
MODULE_OPTIONS = {"-m"}  # `python -m pytest`: runs a module, like a script


def basename(word: Word) -> str:
    value = word.static
    return os.path.basename(value) if value is not None else ""


def names_of(word: Word) -> set[str]:
    return {os.path.basename(v) for v in word.values if v}


# --- wrappers ----------------------------------------------------------------------------------------


@dataclass
class Unwrapped:
    words: list[Word]
    wrappers: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)  # NAME of `env NAME=value`
    reads_stdin_args: bool = False  # xargs: arguments come from stdin
    split_string: str | None = None  # `env -S '…'`: the words are in this string


def strip_wrappers(words: list[Word]) -> Unwrapped:
    """The command a wrapper chain finally runs: `sudo -u x env A=1 timeout 5 nice make` is `make`."""
    out = Unwrapped(list(words))
    while out.words:
        name = basename(out.words[0])
        if name in RUNNER_SUBCOMMANDS and len(out.words) > 1 and out.words[1].static == RUNNER_SUBCOMMANDS[name]:
            out.wrappers.append(f"{name} {RUNNER_SUBCOMMANDS[name]}")
            out.words = _skip_options(out.words[2:], Wrapper(), name)
            continue
        spec = WRAPPERS.get(name)
        if spec is None:
            break
        out.wrappers.append(name)
        rest = out.words[1:]
        if name == "env":
            rest = _env_rest(rest, out)
            if out.split_string is not None:
                out.words = []
                return out
        elif name == "xargs":
            out.reads_stdin_args = True
            rest = _skip_options(rest, spec, name)
            out.words = rest or [Word.literal("echo")]
            continue
        wrapper_word = out.words[0]
        out.words = _skip_options(rest, spec, name) if name != "env" else rest
        if not out.words:
            # `sudo -s` (a root shell), `env` (prints the environment): the wrapper is the command itself
            out.wrappers.pop()
            out.words = [wrapper_word, *rest]
            break
    return out


def _skip_options(words: list[Word], spec: Wrapper, name: str) -> list[Word]:
    i = 0
    while i < len(words):
        value = words[i].static
        if value is None:
            break
        if value == "--":
            i += 1
            break
        if not value.startswith("-") or value == "-":
            break
        attached = "=" in value and value.startswith("--")
        i += 2 if value in spec.takes_value and not attached else 1
    i += min(spec.positionals, max(len(words) - i, 0))
    return words[i:]


def _env_rest(words: list[Word], out: Unwrapped) -> list[Word]:
    i = 0
    while i < len(words):
        value = words[i].static
        if value is None:
            break
        if value in ("-S", "--split-string") and i + 1 < len(words):
            out.split_string = words[i + 1].static or ""
            return []
        if value.startswith("--split-string="):
            out.split_string = value.split("=", 1)[1]
            return []
        if ENV_ASSIGNMENT.match(value):
            out.assignments.append(value.split("=", 1)[0].rstrip("+"))
            i += 1
            continue
        if value == "--":
            i += 1
            break
        if value.startswith("-") and value != "-":
            i += 2 if value in WRAPPERS["env"].takes_value else 1
            continue
        break
    return words[i:]


def split_words(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


# --- shells and interpreters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeSource:
    """Where a shell or an interpreter takes its code from."""

    kind: str  # "string" (inline code), "stdin", "file" (a script), "none" (nothing to run)
    code: Word | None = None


def shell_code(name: str, args: list[Word]) -> CodeSource:
    """`bash -c CODE`, `bash script.sh`, or `bash` reading stdin (also `su -c`, `sudo -s`)."""
    if name == "su":
        return _su_code(args)
    command_mode = False
    i = 0
    while i < len(args):
        value = args[i].static
        if value is None:
            return CodeSource("string", args[i]) if command_mode else CodeSource("file", args[i])
        if value == "--":
            i += 1
            break
        if value in SHELL_VALUE_OPTIONS:
            i += 2
            continue
        if value == "-":
            return CodeSource("stdin")
        if (value.startswith("-") or value.startswith("+")) and len(value) > 1:
            if not value.startswith("--") and "c" in value[1:]:
                command_mode = True
            i += 1
            continue
        break
    if i < len(args):
        return CodeSource("string" if command_mode else "file", args[i])
    return CodeSource("string", Word.literal("")) if command_mode else CodeSource("stdin")


def _su_code(args: list[Word]) -> CodeSource:
    i = 0
    while i < len(args):
        value = args[i].static
        if value in ("-c", "--command") and i + 1 < len(args):
            return CodeSource("string", args[i + 1])
        if value is not None and value.startswith("--command="):
            return CodeSource("string", Word.literal(value.split("=", 1)[1]))
        i += 2 if value in ("-s", "--shell", "-g", "--group", "-G", "--supp-group") else 1
    return CodeSource("stdin")


def interpreter_family(name: str) -> str | None:
    match = _INTERPRETER.match(name)
    if match is None:
        return None
    for family in ("python", "pypy", "perl", "ruby", "nodejs", "node", "php", "luajit", "lua", "tclsh"):
        if name.startswith(family):
            return {"nodejs": "node", "luajit": "lua"}.get(family, family)
    return "awk" if name.endswith("awk") else name


def interpreter_code(family: str, args: list[Word]) -> CodeSource:
    """`python -c CODE`, `perl -e CODE`, `awk PROGRAM`, a script file, or code read from stdin."""
    inline = INLINE_CODE_OPTIONS.get(family, set())
    takes_value = VALUE_OPTIONS.get(family, set())
    if family == "awk":
        return _awk_code(args, takes_value)
    if family == "deno" and args and args[0].static == "eval":
        return CodeSource("string", args[1] if len(args) > 1 else Word.literal(""))
    i = 0
    while i < len(args):
        value = args[i].static
        if value is None:
            return CodeSource("file", args[i])
        if value in inline:
            return CodeSource("string", args[i + 1] if i + 1 < len(args) else Word.literal(""))
        attached = next((o for o in inline if value.startswith(o) and len(value) > len(o) and len(o) == 2), None)
        if attached:
            return CodeSource("string", Word.literal(value[len(attached) :]))
        if value in MODULE_OPTIONS and family in ("python", "pypy"):
            return CodeSource("file", args[i + 1] if i + 1 < len(args) else None)
        if value == "-":
            return CodeSource("stdin")
        if value in ("--version", "-V", "--help", "-h"):
            return CodeSource("none")
        if value.startswith("-"):
            i += 2 if value in takes_value else 1
            continue
        return CodeSource("file", args[i])
    return CodeSource("stdin")


def _awk_code(args: list[Word], takes_value: set[str]) -> CodeSource:
    i = 0
    while i < len(args):
        value = args[i].static
        if value is None:
            return CodeSource("string", args[i])
        if value in ("-f", "--file"):
            return CodeSource("file", args[i + 1] if i + 1 < len(args) else None)
        if value == "--":
            i += 1
            break
        if value.startswith("-") and value != "-":
            i += 2 if value in takes_value else 1
            continue
        break
    return CodeSource("string", args[i]) if i < len(args) else CodeSource("none")


# --- find -exec and static output ----------------------------------------------------------------------

FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_roots(args: list[Word]) -> list[Word]:
    roots: list[Word] = []
    for word in args:
        value = word.static
        if value is not None and (value.startswith("-") or value in ("(", "!", "\\(")):
            break
        roots.append(word)
    return roots or [Word.literal(".")]


def find_exec_commands(args: list[Word]) -> list[list[Word]]:
    """The commands `find … -exec CMD {} ;` runs, with `{}` standing for the search roots."""
    roots = find_roots(args)
    root_values = tuple(v for root in roots for v in root.values)
    root_word = Word(root_values or (".",), any(r.dynamic for r in roots), "{}")
    commands: list[list[Word]] = []
    i = 0
    while i < len(args):
        if args[i].static in FIND_EXEC:
            j = i + 1
            inner: list[Word] = []
            while j < len(args) and args[j].static not in (";", "+", "\\;"):
                inner.append(root_word if "{}" in (args[j].static or "") else args[j])
                j += 1
            if inner:
                commands.append(inner)
            i = j
        i += 1
    return commands


def static_output(words: list[Word], stdin: str | None) -> str | None:
    """What `echo`/`printf`/`cat` print when all their words are literal; None when it cannot be known."""
    if not words or any(w.static is None for w in words):
        return None
    values = [w.static or "" for w in words]
    name, args = os.path.basename(values[0]), values[1:]
    if name == "echo":
        newline, escapes = True, False
        while args and re.fullmatch(r"-[neE]+", args[0]):
            newline = newline and "n" not in args[0]
            escapes = "e" in args[0]
            args = args[1:]
        text = " ".join(args)
        return (decode_ansi_c(text) if escapes else text) + ("\n" if newline else "")
    if name == "printf" and args:
        fmt, rest = decode_ansi_c(args[0]), args[1:]
        if "%s" not in fmt:
            return fmt
        pieces = fmt.split("%s")
        count = len(pieces) - 1
        chunks = [rest[i : i + count] for i in range(0, max(len(rest), 1), count)] or [[]]
        out = []
        for chunk in chunks:
            values = chunk + [""] * (count - len(chunk))
            out.append("".join(piece + (values[i] if i < count else "") for i, piece in enumerate(pieces)))
        return "".join(out)
    if name == "cat" and not [a for a in args if a != "-"]:
        return stdin
    return None
