"""A bash command line, parsed with a real bash grammar (tree-sitter-bash), as the simple commands it runs.

Every simple command found anywhere becomes a ``Segment``: in lists and pipelines, in `if`/`for`/`while`/
`case`, in subshells and `{ …; }`, in function bodies (whether called or not), in command and process
substitutions, in the code of `bash -c '…'`, `eval`, `trap`, `watch`, `alias`, in a static string piped or
fed (heredoc, here-string) into a shell, and in `find -exec`/`xargs`. Wrappers (`sudo`, `env`, `timeout`,
`busybox`, …) are stripped so the real program comes first. Words are expanded as far as can be known
before running (quotes, `$'…'`, braces, `~`, variables assigned in the line, `$(echo …)`), see
``shell_words``; what stays unknown is recorded, per segment, as a reason the command's effect cannot be
determined statically. tree-sitter is imported on first use, not at start-up.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from catbuddy.safety.shell_model import ParsedCommand, Segment, WalkState
from catbuddy.safety.shell_walk import Walker
from catbuddy.safety.shell_words import Word

if TYPE_CHECKING:
    from tree_sitter import Parser

__all__ = ["ParsedCommand", "Segment", "bash_parser", "parse_command"]


@functools.lru_cache(maxsize=1)
def bash_parser() -> Parser:
    """The tree-sitter bash parser, built once (the import is deferred to the first command)."""
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse_command(command: str, *, home: str, cwd: str) -> ParsedCommand:
    """Every simple command in ``command`` (nested ones too), with what could not be known statically."""
    out = ParsedCommand()
    try:
        parser = bash_parser()
    except Exception as exc:  # the grammar is a dependency; without it, nothing counts as understood
        out.parsed = False
        out.problems.append(f"the bash grammar is unavailable: {exc}")
        _rough_segments(command, out, home, cwd)
        return out
    walker = Walker(parser, out, WalkState(cwds=frozenset({cwd})), home=home, cwd=cwd, depth=0)
    try:
        walker.script(command)
    except RecursionError:  # a last resort: the depth budget should stop long before
        out.parsed = False
        out.problems.append("the command nests too deeply")
    if not out.parsed:
        _rough_segments(command, out, home, cwd)
    return out


def _rough_segments(command: str, out: ParsedCommand, home: str, cwd: str) -> None:
    """A split by hand of what the grammar could not parse, so a denied command cannot hide behind a stray
    quote. Only the deny rules look at these."""
    for piece in re.split(r"[;&|\n()`{}]+|\$\(|<\(|>\(", command):
        words = [w.strip("'\"") for w in piece.split()]
        words = [w for w in words if w]
        if words:
            values = [Word.literal(home + w[1:] if w == "~" or w.startswith("~/") else w) for w in words]
            out.segments.append(Segment(values, cwds=frozenset({cwd}), rough=True, source=piece.strip()))
