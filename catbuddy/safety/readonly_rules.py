"""What one program does with its arguments: reads only, writes files, or runs other programs.

A curated set of programs is understood flag by flag (``RULES``): `git` with its read-only subcommands,
`find` without `-exec`/`-delete`/`-fprint*`, `sed` scripts without `e`/`w`, `rg` without `--pre`, `sort`
and `base64` without `-o`, and plain readers (`ls`, `cat`, `wc`, …) that have no writing flag at all. Any
other program is not understood: it may do anything (``Effect.EXEC``). The lists follow the peers' own
rules — Codex's `is_safe_command.rs` (codex-rs/core/src/command_safety) — widened with the read-only
subcommands and programs the same tests exercise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from catbuddy.safety.readonly_base import (
    READ,
    UNKNOWN_ARGUMENT,
    Effect,
    Rule,
    Ruling,
    long_option,
    operands,
    short_letters,
)
from catbuddy.safety.readonly_git import git_rule
from catbuddy.safety.readonly_sed import sed_rule

if TYPE_CHECKING:
    from catbuddy.safety.shell_words import Word

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
        "env",
        "shasum",
        "more",
        ":",
        "exit",
        "set",
    }
)
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
        if long_option(arg, "--pre", "--hostname-bin"):
            return Ruling(Effect.EXEC, f"`rg {arg.split('=')[0]}` runs a program")
        if arg == "--search-zip" or "z" in short_letters(arg, "eEfgjmtTABCMr"):
            return Ruling(Effect.EXEC, "`rg -z` runs decompression programs")
    return READ


def _fd(args: list[str]) -> Ruling:
    for arg in args:
        if long_option(arg, "--exec", "--exec-batch") or set(short_letters(arg, "edEtcjS")) & {"x", "X"}:
            return Ruling(Effect.EXEC, "`fd --exec` runs a command on what it finds")
    return READ


def _sort(args: list[str]) -> Ruling:
    for arg in args:
        if long_option(arg, "--compress-program"):
            return Ruling(Effect.EXEC, "`sort --compress-program` runs a program")
        if long_option(arg, "--output") or "o" in short_letters(arg, "ktTSo"):
            return Ruling(Effect.WRITE, "`sort -o` writes a file")
    return READ


def _base64(args: list[str]) -> Ruling:
    for arg in args:
        if long_option(arg, "--output") or arg.startswith("-o"):
            return Ruling(Effect.WRITE, "`base64 -o` writes a file")
    return READ


def _tree(args: list[str]) -> Ruling:
    for arg in args:
        if "o" in short_letters(arg, "oLPIH") or "R" in short_letters(arg, "oLPIH"):
            return Ruling(Effect.WRITE, "`tree -o` writes a file")
    return READ


def _xxd(args: list[str]) -> Ruling:
    return Ruling(Effect.WRITE, "`xxd IN OUT` writes its output file") if len(operands(args)) > 1 else READ


def _uniq(args: list[str]) -> Ruling:
    return Ruling(Effect.WRITE, "`uniq IN OUT` writes its output file") if len(operands(args)) > 1 else READ


def _file(args: list[str]) -> Ruling:
    if any(long_option(a, "--compile") or "C" in short_letters(a, "fFmeP") for a in args):
        return Ruling(Effect.WRITE, "`file -C` writes a magic file")
    return READ


def _date(args: list[str]) -> Ruling:
    for arg in args:
        if long_option(arg, "--set") or "s" in short_letters(arg, "dfrsI"):
            return Ruling(Effect.WRITE, "`date -s` sets the clock")
    if any(not o.startswith("+") for o in operands(args)):
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


def _less(args: list[str]) -> Ruling:
    for arg in args:
        letters = set(short_letters(arg, "oObhjkpPtTxyz"))
        if long_option(arg, "--log-file", "--LOG-FILE") or letters & {"o", "O"}:
            return Ruling(Effect.WRITE, "`less -o` writes a log file")
    return READ


def _yq(args: list[str]) -> Ruling:
    if any(long_option(a, "--inplace") or "i" in short_letters(a, "") for a in args):
        return Ruling(Effect.WRITE, "`yq -i` edits the file in place")
    return READ


# --- the table ------------------------------------------------------------------------------------------

RULES: dict[str, Rule] = {
    "git": git_rule,
    "find": _find,
    "rg": _rg,
    "sed": sed_rule,
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
    "less": _less,
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
