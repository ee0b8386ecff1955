"""What one program does with its arguments: reads only, writes files, or runs other programs.

A curated set of programs is understood flag by flag (``RULES``): `git` with its read-only subcommands,
`find` without `-exec`/`-delete`/`-fprint*`, `sed` scripts without `e`/`w`, `rg` without `--pre`, `sort`
and `base64` without `-o`, and plain readers (`ls`, `cat`, `wc`, …) that have no writing flag at all. Any
other program is not understood: it may do anything (``Effect.EXEC``). The lists follow the peers' own
rules — Codex's `is_safe_command.rs` (codex-rs/core/src/command_safety) — widened with the read-only
subcommands and programs the same tests exercise.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from catbuddy.safety.shell_words import Word


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

# Programs that only read and print whatever their flags (GNU coreutils and friends).
PLAIN_READERS = frozenset(
    {
        "cat",
        "cd",
        "pushd",
        "popd",
        "dirs",
        "cut",
        "echo",
        "printf",
        "expr",
        "false",
        "true",
        "grep",
        "egrep",
        "fgrep",
        "head",
        "tail",
        "id",
        "ls",
        "nl",
        "paste",
        "pwd",
        "rev",
        "seq",
        "stat",
        "tr",
        "uname",
        "wc",
        "which",
        "whereis",
        "type",
        "whoami",
        "numfmt",
        "tac",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "du",
        "df",
        "od",
        "hexdump",
        "strings",
        "cmp",
        "diff",
        "comm",
        "join",
        "column",
        "fold",
        "expand",
        "unexpand",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "nproc",
        "uptime",
        "arch",
        "tty",
        "groups",
        "locale",
        "printenv",
        "ps",
        "free",
        "lscpu",
        "test",
        "[",
        "sleep",
        "jq",
        "getconf",
        "look",
        "fmt",
    }
)
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


def _long(arg: str, *names: str) -> bool:
    return any(arg == name or arg.startswith(name + "=") for name in names)


# --- find, rg, sort, base64, tree, xxd, file, date, hostname, uniq, yq, fd ------------------------------

FIND_WRITES = frozenset({"-delete", "-fls", "-fprint", "-fprint0", "-fprintf"})
FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find(args: list[str]) -> Ruling:
    for arg in args:
        if arg in FIND_RUNS:
            return Ruling(Effect.EXEC, f"`find {arg}` runs a command on what it finds")
    for arg in args:
        if arg in FIND_WRITES:
            what = "deletes what it finds" if arg == "-delete" else "writes a file"
            return Ruling(Effect.WRITE, f"`find {arg}` {what}")
    return READ


def _rg(args: list[str]) -> Ruling:
    for arg in args:
        if _long(arg, "--pre", "--hostname-bin"):
            return Ruling(Effect.EXEC, f"`rg {arg.split('=')[0]}` runs a program")
        if arg == "--search-zip" or "z" in short_letters(arg, "eEfgjmtTABCMr"):
            return Ruling(Effect.EXEC, "`rg -z` runs decompression programs")
    return READ


def _fd(args: list[str]) -> Ruling:
    for arg in args:
        if _long(arg, "--exec", "--exec-batch") or set(short_letters(arg, "edEtcjS")) & {"x", "X"}:
            return Ruling(Effect.EXEC, "`fd --exec` runs a command on what it finds")
    return READ


def _sort(args: list[str]) -> Ruling:
    for arg in args:
        if _long(arg, "--compress-program"):
            return Ruling(Effect.EXEC, "`sort --compress-program` runs a program")
        if _long(arg, "--output") or "o" in short_letters(arg, "ktTSo"):
            return Ruling(Effect.WRITE, "`sort -o` writes a file")
    return READ


def _base64(args: list[str]) -> Ruling:
    for arg in args:
        if _long(arg, "--output") or arg.startswith("-o"):
            return Ruling(Effect.WRITE, "`base64 -o` writes a file")
    return READ


def _tree(args: list[str]) -> Ruling:
    for arg in args:
        if "o" in short_letters(arg, "oLPIH") or "R" in short_letters(arg, "oLPIH"):
            return Ruling(Effect.WRITE, "`tree -o` writes a file")
    return READ


def _operands(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


def _xxd(args: list[str]) -> Ruling:
    return Ruling(Effect.WRITE, "`xxd IN OUT` writes its output file") if len(_operands(args)) > 1 else READ


def _uniq(args: list[str]) -> Ruling:
    return Ruling(Effect.WRITE, "`uniq IN OUT` writes its output file") if len(_operands(args)) > 1 else READ


def _file(args: list[str]) -> Ruling:
    if any(_long(a, "--compile") or "C" in short_letters(a, "fFmeP") for a in args):
        return Ruling(Effect.WRITE, "`file -C` writes a magic file")
    return READ


def _date(args: list[str]) -> Ruling:
    for arg in args:
        if _long(arg, "--set") or "s" in short_letters(arg, "dfrsI"):
            return Ruling(Effect.WRITE, "`date -s` sets the clock")
    if any(not o.startswith("+") for o in _operands(args)):
        return Ruling(Effect.WRITE, "`date MMDDhhmm` sets the clock")
    return READ


HOSTNAME_READS = frozenset(
    {
        "-f",
        "-s",
        "-i",
        "-I",
        "-d",
        "-a",
        "-A",
        "-y",
        "--fqdn",
        "--long",
        "--short",
        "--ip-address",
        "--all-ip-addresses",
        "--domain",
        "--alias",
        "--all-fqdns",
        "--nis",
        "-h",
        "--help",
        "-V",
        "--version",
    }
)


def _hostname(args: list[str]) -> Ruling:
    if all(a in HOSTNAME_READS for a in args):
        return READ
    return Ruling(Effect.WRITE, "`hostname NAME` sets the host name")


def _yq(args: list[str]) -> Ruling:
    if any(_long(a, "--inplace") or "i" in short_letters(a, "") for a in args):
        return Ruling(Effect.WRITE, "`yq -i` edits the file in place")
    return READ


# --- sed ------------------------------------------------------------------------------------------------

SED_FLAGS = "nErsuz"  # -n, -E/-r, -s, -u, -z: change how it reads or prints, never what it writes
SED_LONG = frozenset(
    {
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--posix",
        "--debug",
        "--sandbox",
    }
)
# A script command that only prints or edits the text in the pattern space (not `e`, `w`, `r`, `W`, `R`).
_SED_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*)"
_SED_RANGE = rf"(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*"
_SED_SIMPLE = re.compile(rf"{_SED_RANGE}(?:[pPlL=dDnNgGhHxz]|[qQ]\s*\d*)\s*")
_SED_SUBSTITUTE = re.compile(rf"{_SED_RANGE}(?P<command>[sy])(?P<delimiter>.)", re.S)
SED_SAFE_S_FLAGS = re.compile(r"[gpiImM0-9]*")


def _sed_delimited(script: str, start: int, delimiter: str, parts: int) -> int | None:
    """The index after ``parts`` delimited parts of an `s`/`y` command, None when unterminated."""
    i = start
    for _ in range(parts):
        while i < len(script) and script[i] != delimiter:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return None
        i += 1
    return i


def sed_script_effect(script: str) -> Ruling:
    """Whether a sed script only prints: addresses with `p`, `d`, `=`, `q`…, and `s`/`y` without the `e`
    (run a shell) and `w` (write a file) flags. Anything else is not read-only."""
    i = 0
    while i < len(script):
        if script[i] in " \t\n;":
            i += 1
            continue
        simple = _SED_SIMPLE.match(script, i)
        substitute = _SED_SUBSTITUTE.match(script, i)
        if substitute is not None:
            delimiter = substitute.group("delimiter")
            end = _sed_delimited(script, substitute.end(), delimiter, 2)
            if end is None or delimiter in "\n\\":
                return Ruling(Effect.EXEC, "a sed script catbuddy cannot read")
            if substitute.group("command") == "s":
                flags = SED_SAFE_S_FLAGS.match(script, end)
                end = flags.end() if flags else end
                if end < len(script) and script[end] == "e":
                    return Ruling(Effect.EXEC, "the sed `e` flag runs a shell command")
                if end < len(script) and script[end] == "w":
                    return Ruling(Effect.WRITE, "the sed `w` flag writes a file")
            i = end
        elif simple is not None and simple.end() > i:
            i = simple.end()
        else:
            command = script[i:].lstrip("0123456789$,/ !")[:1]
            if command in ("e",):
                return Ruling(Effect.EXEC, "the sed `e` command runs a shell command")
            if command in ("w", "W"):
                return Ruling(Effect.WRITE, "the sed `w` command writes a file")
            return Ruling(Effect.EXEC, f"a sed script catbuddy cannot read ({script[i : i + 20]!r})")
        if i < len(script) and script[i] not in " \t\n;}":
            return Ruling(Effect.EXEC, f"a sed script catbuddy cannot read ({script[i : i + 20]!r})")
    return READ


def _sed(args: list[str]) -> Ruling:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-i", "--in-place") or arg.startswith(("--in-place=", "-i")) and not arg.startswith("-i="):
            return Ruling(Effect.WRITE, "`sed -i` edits files in place")
        if arg in ("-f", "--file") or arg.startswith("--file="):
            return Ruling(Effect.EXEC, "`sed -f` runs a script catbuddy cannot see")
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg == "--expression":
            scripts.append(args[i + 1] if i + 1 < len(args) else "")
            i += 1
        elif arg in SED_LONG or arg.startswith(("--line-length=",)):
            pass
        elif arg.startswith("-") and arg != "-" and not arg.startswith("--"):
            letters = short_letters(arg, "elf")
            if set(letters) - set(SED_FLAGS + "el"):
                bad = sorted(set(letters) - set(SED_FLAGS + "el"))[0]
                if bad == "i":
                    return Ruling(Effect.WRITE, "`sed -i` edits files in place")
                return Ruling(Effect.EXEC, f"`sed -{bad}` is not a flag catbuddy knows to be read-only")
            if letters.endswith("e"):
                rest = arg[1 + len(letters) :]
                scripts.append(rest if rest else (args[i + 1] if i + 1 < len(args) else ""))
                i += 0 if rest else 1
            elif letters.endswith("l") and len(arg) == 1 + len(letters):
                i += 1
        elif arg.startswith("--"):
            return Ruling(Effect.EXEC, f"`sed {arg}` is not a flag catbuddy knows to be read-only")
        else:
            operands.append(arg)
        i += 1
    if not scripts and operands:
        scripts.append(operands.pop(0))
    for script in scripts:
        ruling = sed_script_effect(script)
        if ruling.effect is not Effect.READ:
            return ruling
    return READ


# --- git --------------------------------------------------------------------------------------------------

GIT_GLOBAL_VALUES = frozenset(
    {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}
)
GIT_GLOBAL_RUNS = ("-c", "--config-env", "--exec-path", "-p", "--paginate")  # run configured programs
GIT_READERS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "annotate",
        "shortlog",
        "describe",
        "rev-parse",
        "rev-list",
        "ls-files",
        "ls-tree",
        "cat-file",
        "show-ref",
        "merge-base",
        "name-rev",
        "count-objects",
        "for-each-ref",
        "diff-tree",
        "diff-files",
        "diff-index",
        "grep",
        "whatchanged",
        "cherry",
        "range-diff",
        "var",
        "check-ignore",
        "check-attr",
        "fsck",
        "version",
        "show-branch",
        "verify-commit",
        "verify-tag",
    }
)
# Subcommands that change the repository or the work tree (the destructive forms are told apart elsewhere).
GIT_WRITERS = frozenset(
    {
        "add",
        "am",
        "apply",
        "archive",
        "bisect",
        "branch",
        "checkout",
        "cherry-pick",
        "clean",
        "clone",
        "commit",
        "config",
        "fetch",
        "format-patch",
        "gc",
        "init",
        "merge",
        "mv",
        "notes",
        "prune",
        "pull",
        "push",
        "rebase",
        "reflog",
        "remote",
        "repack",
        "replace",
        "reset",
        "restore",
        "revert",
        "rm",
        "sparse-checkout",
        "stash",
        "submodule",
        "switch",
        "tag",
        "update-index",
        "update-ref",
        "worktree",
        "maintenance",
        "lfs",
        "filter-branch",
    }
)
GIT_OUTPUT_FLAGS = ("--output",)
GIT_RUN_FLAGS = (
    "--ext-diff",
    "--textconv",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--open-files-in-pager",
)
GIT_BRANCH_LISTS = frozenset(
    {
        "--list",
        "-l",
        "--show-current",
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "--no-color",
        "--color",
        "--no-column",
        "--column",
        "-i",
        "--ignore-case",
        "--omit-empty",
    }
)
GIT_BRANCH_LIST_VALUES = (
    "--format",
    "--sort",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--abbrev",
    "--color",
    "--column",
)
GIT_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "--null",
        "-z",
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--includes",
        "--type",
        "--bool",
        "--int",
        "--path",
        "get",
        "list",
    }
)


def git_subcommand(args: list[str]) -> tuple[int, str | None, str | None]:
    """The index and name of git's subcommand after its global options, and a global option that makes
    git run a configured program (`-c core.pager=…`, `--exec-path`), if any."""
    runs: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith(GIT_GLOBAL_RUNS) and runs is None:
            runs = "-c" if arg.startswith("-c") else arg.split("=")[0]
            i += 2 if arg in ("-c", "--config-env") else 1
            continue
        if arg in GIT_GLOBAL_VALUES:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return i, arg, runs
    return i, None, runs


def _git(args: list[str]) -> Ruling:
    index, sub, runs = git_subcommand(args)
    if runs is not None:
        return Ruling(Effect.EXEC, f"`git {runs}` makes git run a configured program", sub)
    if sub is None:
        return READ  # `git`, `git --version`: prints
    rest = args[index + 1 :]
    for arg in rest:
        if _long(arg, *GIT_OUTPUT_FLAGS):
            return Ruling(Effect.WRITE, f"`git {sub} --output` writes a file", sub)
        if _long(arg, *GIT_RUN_FLAGS) or (sub == "grep" and "O" in short_letters(arg, "eEfABCm")):
            return Ruling(Effect.EXEC, f"`git {sub} {arg.split('=')[0]}` runs another program", sub)
    if sub in GIT_READERS:
        return Ruling(Effect.READ, "reads only", sub)
    listing = _git_listing(sub, rest)
    if listing is not None:
        return Ruling(
            Effect.READ if listing else Effect.WRITE,
            "reads only" if listing else f"`git {sub}` changes the repository",
            sub,
        )
    if sub in GIT_WRITERS:
        return Ruling(Effect.WRITE, f"`git {sub}` changes the repository or the work tree", sub)
    return Ruling(
        Effect.EXEC, f"`git {sub}` is not a git command catbuddy knows (an alias may run anything)", sub
    )


def _git_listing(sub: str, rest: list[str]) -> bool | None:
    """For subcommands that list or change (branch, tag, remote, stash, config, …): True when this form only
    lists, False when it changes something, None for other subcommands."""
    operands = _operands(rest)
    if sub == "branch":
        listed = all(
            a in GIT_BRANCH_LISTS or _long(a, *GIT_BRANCH_LIST_VALUES) for a in rest if a.startswith("-")
        )
        return listed and (not operands or bool({"--list", "-l"} & set(rest)))
    if sub == "tag":
        return not rest or bool({"-l", "--list"} & set(rest)) and "-d" not in rest
    if sub == "remote":
        return not operands and all(a in ("-v", "--verbose") for a in rest) or operands[:1] == ["get-url"]
    if sub in ("stash", "worktree", "notes", "reflog"):
        reads = {
            "stash": ("list", "show"),
            "worktree": ("list",),
            "notes": ("list", "show"),
            "reflog": ("show",),
        }[sub]
        return (sub == "reflog" and not operands) or (bool(operands) and operands[0] in reads)
    if sub == "config":
        return (
            bool(set(rest) & (GIT_CONFIG_READS - {"--global", "--system", "--local", "--worktree"}))
            and all(a in GIT_CONFIG_READS or not a.startswith("-") for a in rest)
            and not (operands and operands[0] in ("set", "unset", "rename-section", "remove-section", "edit"))
        )
    return None


# --- the table ------------------------------------------------------------------------------------------

RULES: dict[str, Rule] = {
    "git": _git,
    "find": _find,
    "rg": _rg,
    "sed": _sed,
    "sort": _sort,
    "base64": _base64,
    "tree": _tree,
    "xxd": _xxd,
    "uniq": _uniq,
    "file": _file,
    "date": _date,
    "hostname": _hostname,
    "yq": _yq,
    "fd": _fd,
    "fdfind": _fd,
}


def ruling(name: str, words: Sequence[Word]) -> Ruling | None:
    """What program ``name`` does with ``words``; None when the program is not one catbuddy understands."""
    rule = RULES.get(name)
    if rule is None and name not in PLAIN_READERS:
        return None
    if rule is None:
        return READ
    if any(w.static is None for w in words):
        return UNKNOWN_ARGUMENT
    return rule([w.static or "" for w in words])
