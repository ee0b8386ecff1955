"""What the ledger reads out of an ``exec`` call: its outcome, a failing command's tail, whether it
ran tests and what they said, and (best effort) which files it deleted or moved.

Everything here works on the text the exec tool returned (docs/architecture.md §8: the output, a blank
line, then ``Exit code: N`` / ``Timed out after …`` / ``Killed by signal …``), so it also reads
sessions written by an older catbuddy.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from catbuddy.text import cut_line

EXIT_RE = re.compile(r"^Exit code: (-?\d+)\s*$", re.M)
TIMEOUT_RE = re.compile(r"^Timed out after [\d.]+ s", re.M)
KILLED_RE = re.compile(r"^Killed by signal (\d+)", re.M)
TRAILER_RE = re.compile(r"\n\n(?:Exit code: -?\d+|Timed out after |Killed by signal )")
TAIL_LINES = 8
TAIL_LINE_CHARS = 160
# Test runners, as a word at the start of a simple command (after `python -m`, `npx`, `uv run`, …).
TEST_COMMAND_RE = re.compile(
    r"(?:^|[\s;&|(])(?:python[0-9.]*\s+-m\s+|uv\s+run\s+|poetry\s+run\s+|npx\s+|pnpm\s+(?:exec\s+)?|bunx\s+)?"
    r"(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|cargo\s+(?:test|nextest)|go\s+test|"
    r"make\s+(?:test|check)\b|mvn\s+(?:\S+\s+)*test|gradle\w*\s+(?:\S+\s+)*test|dotnet\s+test|deno\s+test|"
    r"bun\s+test|mix\s+test|swift\s+test|zig\s+build\s+test)(?=$|[\s;&|)])"
)
# A line of test-runner output worth quoting: "3 passed, 1 failed in 0.2s", "test result: ok. …", "FAILED …"
TEST_SUMMARY_RE = re.compile(
    r"\b(?:\d+\s+(?:passed|failed|errors?|skipped|tests?|examples?|failures?)|test result:|"
    r"Tests?:\s+\d+|FAILED|FAIL\b|PASS(?:ED)?\b|^ok\s|^OK\b|no tests ran)",
    re.I | re.M,
)
SHELL_OPERATORS = {"&&", ";"}  # after `||` or `&` we cannot know what ran
UNSAFE_CHARS = set("<>()$`*?[]{}~!\\")  # a command with any of these is not read for deletions


@dataclass(frozen=True)
class ExecOutcome:
    status: str  # ok, failed, timeout, killed, error (the tool refused or failed: nothing ran)
    exit_code: int | None
    output: str  # the command's own output, without the trailer


def exec_outcome(result: str, is_error: bool) -> ExecOutcome:
    if is_error:
        return ExecOutcome("error", None, result)
    trailer = TRAILER_RE.search(result)
    output = result[: trailer.start()] if trailer else result
    if output == "(no output)":
        output = ""
    if TIMEOUT_RE.search(result):
        return ExecOutcome("timeout", None, output)
    killed = KILLED_RE.search(result)
    if killed:
        return ExecOutcome("killed", -int(killed.group(1)), output)
    codes = EXIT_RE.findall(result)
    if not codes:
        return ExecOutcome("unknown", None, output)
    code = int(codes[-1])
    return ExecOutcome("ok" if code == 0 else "failed", code, output)


def output_tail(output: str, lines: int = TAIL_LINES) -> str:
    """The last few non-blank lines, each cut to a sensible width: where a failure says why."""
    kept = [line for line in output.rstrip().splitlines() if line.strip()][-lines:]
    return "\n".join(cut_line(line, TAIL_LINE_CHARS) for line in kept)


def is_test_command(command: str) -> bool:
    return TEST_COMMAND_RE.search(command) is not None


def runner_verdict(output: str) -> str:
    """The runner's own verdict line (the last line that looks like one), or ''."""
    found = ""
    for line in output.splitlines():
        if TEST_SUMMARY_RE.search(line):
            found = line.strip(" =-")
    return cut_line(found, TAIL_LINE_CHARS)


def file_removals(command: str) -> list[tuple[str, str | None]]:
    """``(path, moved_to)`` for every file a plain ``rm``/``git rm``/``mv``/``git mv`` in ``command``
    removes; ``moved_to`` is None for a deletion. Only simple commands joined by ``&&``/``;`` with
    literal paths are read (the caller passes only commands that exited 0): globs, variables, pipes,
    ``||``, ``&``, subshells or redirections make it return []."""
    if any(char in UNSAFE_CHARS for char in command) or "\n" in command:
        return []
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return []
    removed: list[tuple[str, str | None]] = []
    segment: list[str] = []
    for word in [*words, ";"]:
        if word in SHELL_OPERATORS:
            removed += _segment_removals(segment)
            segment = []
        elif set(word) <= set(";&|"):
            return []  # `|`, `&` or another operator: not a plain sequence
        else:
            segment.append(word)
    return removed


def _segment_removals(words: list[str]) -> list[tuple[str, str | None]]:
    if words[:1] == ["git"] and len(words) > 1:
        words = words[1:]
    if not words or words[0] not in ("rm", "mv") or "--cached" in words:
        return []  # `git rm --cached` leaves the file on disk
    args, options_done = [], False
    for word in words[1:]:
        if not options_done and word == "--":
            options_done = True
        elif not options_done and word.startswith("-"):
            if words[0] == "mv" and word in ("-t", "--target-directory", "-S", "--suffix"):
                return []  # the target is not the last argument: do not guess
            continue
        else:
            args.append(word)
    if words[0] == "rm":
        return [(path, None) for path in args]
    if len(args) == 2:
        return [(args[0], args[1])]
    return []  # mv of several files into a folder: where each lands is a guess
