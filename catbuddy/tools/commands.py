"""Split a shell command into the simple commands it would run, for deny patterns and approval.

A bash-like lexer, not a bash: it knows quotes, escapes, comments, `;` `&&` `||` `|` `&` and newlines,
subshell parentheses, redirections, ``$(…)``, backticks and ``<(…)``, and it unwraps ``bash -c '…'``,
``eval``, env assignments and wrappers such as ``sudo`` or ``timeout 5``. Every simple command found
anywhere (nested ones included) becomes a ``Segment``. A command it cannot parse (unbalanced quotes,
nesting too deep) is reported as such, so the caller asks instead of guessing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

MAX_DEPTH = 8  # nested `bash -c "$(…)"` levels before we give up and ask

SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "busybox", "su"}
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
# Words that only introduce the real command; their options are skipped too.
KEYWORDS = {"if", "then", "elif", "else", "do", "while", "until", "!", "{", "}", "time", "coproc"}
# wrapper -> options that take a separate value
WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"},
    "doas": {"-u", "-C"},
    "env": {"-u", "--unset", "-C", "--chdir"},
    "nohup": set(),
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "xargs": {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--arg-file", "--delimiter", "--max-args"},
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "setsid": set(),
    "stdbuf": {"-i", "-o", "-e"},
    "chronic": set(),
    "watch": {"-n", "-d", "--interval"},
}
PRIVILEGE_WRAPPERS = {"sudo", "doas", "su"}


@dataclass
class Segment:
    """One simple command: its words (quotes removed) and its redirections."""

    words: list[str]
    redirects: list[tuple[str, str]] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)  # stripped wrappers, e.g. ["sudo"]

    @property
    def name(self) -> str:
        return os.path.basename(self.words[0]) if self.words else ""

    @property
    def args(self) -> list[str]:
        return self.words[1:]

    def text(self) -> str:
        """A normalised one-line form that user deny patterns are matched against."""
        parts = [self.name, *self.args] if self.words else []
        parts += [f"{op} {target}" for op, target in self.redirects]
        return " ".join(parts)


@dataclass
class Analysis:
    segments: list[Segment]
    parsed: bool = True
    problem: str = ""


class _Unparsable(Exception):
    pass


def analyze(command: str) -> Analysis:
    """All simple commands in ``command`` (nested ones too), or why it could not be parsed."""
    segments: list[Segment] = []
    try:
        _analyze_into(command, segments, 0)
    except _Unparsable as exc:
        return Analysis(segments, parsed=False, problem=str(exc))
    return Analysis(segments)


def _analyze_into(command: str, out: list[Segment], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _Unparsable("the command nests shells or substitutions too deeply")
    raw_segments, nested = _Lexer(command).run()
    for inner in nested:
        _analyze_into(inner, out, depth + 1)
    for words, redirects in raw_segments:
        segment = _unwrap(words, redirects)
        if segment is None:
            continue
        out.append(segment)
        inner_command = _inner_command(segment)
        if inner_command is not None:
            _analyze_into(inner_command, out, depth + 1)


def _unwrap(words: list[str], redirects: list[tuple[str, str]]) -> Segment | None:
    """Strip env assignments, keywords and wrappers so the real command comes first."""
    wrappers: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        base = os.path.basename(word)
        if ENV_ASSIGNMENT.match(word) or word in KEYWORDS:
            i += 1
            continue
        if base in WRAPPERS:
            wrappers.append(base)
            i = _skip_options(words, i + 1, WRAPPERS[base], base)
            continue
        break
    rest = words[i:]
    if not rest and not redirects:
        return None
    return Segment(rest, redirects, wrappers)


def _skip_options(words: list[str], i: int, takes_value: set[str], wrapper: str) -> int:
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if wrapper == "env" and ENV_ASSIGNMENT.match(word):
            i += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        i += 2 if word in takes_value else 1
    if wrapper == "timeout" and i < len(words):
        i += 1  # the duration
    return i


def _inner_command(segment: Segment) -> str | None:
    """The command string run by ``bash -c '…'``, ``eval …`` or ``env -S '…'``."""
    name, args = segment.name, segment.args
    if name == "eval":
        return " ".join(args)
    if name in SHELLS:
        for index, arg in enumerate(args):
            if arg == "-c" or (re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", arg) and not arg.startswith("--")):
                return args[index + 1] if index + 1 < len(args) else ""
            if arg in ("-S", "--split-string") and index + 1 < len(args):
                return args[index + 1]
        return None
    return None


class _Lexer:
    """One pass over a command line; nested substitutions are returned for separate analysis."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.segments: list[tuple[list[str], list[tuple[str, str]]]] = []
        self.nested: list[str] = []
        self.words: list[str] = []
        self.redirects: list[tuple[str, str]] = []
        self.word: list[str] | None = None  # None: not inside a word
        self.pending_redirect: str | None = None

    def run(self) -> tuple[list[tuple[list[str], list[tuple[str, str]]]], list[str]]:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t":
                self._end_word()
                self.pos += 1
            elif ch in "\n;&|()":
                self._operator(ch)
            elif ch in "<>":
                self._redirect()
            elif ch == "#" and self.word is None:
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch == "\\":
                self._escape()
            elif ch == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    raise _Unparsable("unbalanced single quote")
                self._add(text[self.pos + 1 : end])
                self.pos = end + 1
            elif ch == '"':
                self._double_quoted()
            elif ch == "`":
                self._add("`…`")
                self.nested.append(self._backtick())
            elif ch == "$" and text.startswith("$(", self.pos):
                self._add("$(…)")
                self.nested.append(self._parenthesised(self.pos + 2))
            else:
                self._add(ch)
                self.pos += 1
        self._end_segment()
        if self.pending_redirect:
            raise _Unparsable(f"redirection `{self.pending_redirect}` without a target")
        return self.segments, self.nested

    # words and segments ------------------------------------------------------------------------
    def _add(self, piece: str) -> None:
        if self.word is None:
            self.word = []
        self.word.append(piece)

    def _end_word(self) -> None:
        if self.word is None:
            return
        word = "".join(self.word)
        self.word = None
        if self.pending_redirect is not None:
            self.redirects.append((self.pending_redirect, word))
            self.pending_redirect = None
        else:
            self.words.append(word)

    def _end_segment(self) -> None:
        self._end_word()
        if self.words or self.redirects:
            self.segments.append((self.words, self.redirects))
        self.words, self.redirects = [], []

    def _operator(self, ch: str) -> None:
        text = self.text
        if ch == "&" and text.startswith("&>", self.pos):
            self._redirect()
            return
        if ch == "(" and self.word is not None and text.startswith("()", self.pos):
            # `name() { … }` function definition: the name is not a command
            self.word = None
            self.pos += 2
            self._end_segment()
            return
        self._end_segment()
        self.pos += 2 if text[self.pos : self.pos + 2] in ("&&", "||", "|&", ";;") else 1

    def _redirect(self) -> None:
        text = self.text
        # `2>` / `1>>`: the digits just lexed are a file descriptor, not a word
        if self.word is not None and "".join(self.word).isdigit():
            self.word = None
        self._end_word()
        if text[self.pos] in "<>" and text.startswith("(", self.pos + 1):
            self._add("<(…)")
            self.nested.append(self._parenthesised(self.pos + 2))
            return
        match = re.match(r"&>>?|>>|>\||>&|<<<|<<-?|<>|<&|>|<", text[self.pos :])
        op = match.group(0) if match else text[self.pos]
        self.pos += len(op)
        if op in (">&", "<&"):
            digits = re.match(r"\d+-?|-", text[self.pos :])
            if digits:  # fd duplication such as 2>&1 has no file target
                self.pos += len(digits.group(0))
                return
        self.pending_redirect = op

    def _escape(self) -> None:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if nxt == "\n":  # line continuation
            self.pos += 2
            return
        self._add(nxt)
        self.pos += 2

    def _double_quoted(self) -> None:
        text = self.text
        self.pos += 1
        piece: list[str] = []
        while True:
            if self.pos >= len(text):
                raise _Unparsable("unbalanced double quote")
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                break
            if ch == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in '"\\$`\n':
                if text[self.pos + 1] != "\n":
                    piece.append(text[self.pos + 1])
                self.pos += 2
            elif ch == "`":
                piece.append("`…`")
                self.nested.append(self._backtick())
            elif text.startswith("$(", self.pos):
                piece.append("$(…)")
                self.nested.append(self._parenthesised(self.pos + 2))
            else:
                piece.append(ch)
                self.pos += 1
        self._add("".join(piece))

    def _backtick(self) -> str:
        text = self.text
        start = self.pos + 1
        i = start
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == "`":
                self.pos = i + 1
                return text[start:i].replace("\\`", "`")
            i += 1
        raise _Unparsable("unbalanced backtick")

    def _parenthesised(self, start: int) -> str:
        """The text up to the matching `)`, skipping quoted parts; moves past it."""
        text = self.text
        depth = 1
        i = start
        while i < len(text):
            ch = text[i]
            if ch == "\\":
                i += 2
                continue
            if ch == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    raise _Unparsable("unbalanced single quote")
                i = end + 1
                continue
            if ch == '"':
                i += 1
                while i < len(text) and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                i += 1
                continue
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    self.pos = i + 1
                    return text[start:i]
            i += 1
        raise _Unparsable("unbalanced parenthesis in $(…)")
