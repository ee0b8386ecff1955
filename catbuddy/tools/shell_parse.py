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
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from catbuddy.tools import shell_programs as programs
from catbuddy.tools.shell_words import DYNAMIC_PART, Word, evaluate

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_NESTING = 8  # `bash -c "eval '…'"` levels before we give up
# Nested constructs (statements and words, across nested shells) before we give up: well below Python's
# recursion limit, since each level costs a few frames.
MAX_NODE_DEPTH = 120
MAX_SEGMENTS = 5000
EXPANSION_NODES = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion", "process_substitution"}
)
CONDITIONAL_NODES = frozenset(
    {"if_statement", "elif_clause", "else_clause", "while_statement", "for_statement", "c_style_for_statement",
     "case_statement", "case_item", "subshell", "do_group"}
)  # what runs inside these may or may not run, so assignments and `cd` add possibilities
STATE_READERS = frozenset({"read", "mapfile", "readarray", "getopts"})


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
class _State:
    variables: dict[str, tuple[frozenset[str], bool]] = field(default_factory=dict)
    cwds: frozenset[str] | None = None
    functions: set[str] = field(default_factory=set)

    def copy(self) -> _State:
        return _State(dict(self.variables), self.cwds, set(self.functions))


@dataclass(frozen=True)
class _IO:
    redirects: tuple[tuple[str, Word], ...] = ()
    stdin: str | None = None
    stdin_kind: str = "none"

    def with_stdin(self, text: str | None, kind: str) -> _IO:
        return replace(self, stdin=text, stdin_kind=kind)


@functools.lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse_command(command: str, *, home: str, cwd: str) -> ParsedCommand:
    """Every simple command in ``command`` (nested ones too), with what could not be known statically."""
    out = ParsedCommand()
    try:
        parser = _parser()
    except Exception as exc:  # the grammar is a dependency; without it, nothing counts as understood
        out.parsed = False
        out.problems.append(f"the bash grammar is unavailable: {exc}")
        _rough_segments(command, out, home, cwd)
        return out
    walker = _Walker(parser, out, _State(cwds=frozenset({cwd})), home=home, cwd=cwd, depth=0)
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


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


class _Walker:
    """Walks one script's syntax tree; nested scripts (`bash -c`, `eval`) get a walker of their own."""

    def __init__(
        self, parser: Parser, out: ParsedCommand, state: _State, *, home: str, cwd: str, depth: int
    ) -> None:
        self.parser = parser
        self.out = out
        self.state = state
        self.home = home
        self.cwd = cwd
        self.depth = depth
        self.conditional = 0
        self.function: str | None = None
        self.nesting: list[int] = [0]  # shared with nested walkers: one budget for the whole line

    # --- entry points -----------------------------------------------------------------------------

    def script(self, text: str, io: _IO | None = None) -> None:
        tree = self.parser.parse(text.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.out.parsed = False
            self.out.problems.append(_error_hint(tree.root_node))
        self.visit(tree.root_node, io or _IO())

    def nested(self, code: str, io: _IO, kind: str) -> None:
        """Code run by a shell, `eval`, `trap`, … is analysed like the line itself."""
        if self.depth + 1 > MAX_NESTING:
            self.out.parsed = False
            self.out.problems.append(f"{kind} nested more than {MAX_NESTING} levels deep")
            return
        inner = _Walker(self.parser, self.out, self.state.copy(), home=self.home, cwd=self.cwd, depth=self.depth + 1)
        inner.nesting = self.nesting
        inner.function = self.function
        inner.conditional = self.conditional
        inner.script(code, io)

    # --- Scope, for the word evaluator --------------------------------------------------------------

    def lookup(self, name: str) -> tuple[tuple[str, ...], bool]:
        if name in self.state.variables:
            values, dynamic = self.state.variables[name]
            return tuple(sorted(values)), dynamic
        if name == "HOME":
            return (self.home,), False
        if name == "PWD" and self.state.cwds is not None and len(self.state.cwds) == 1:
            return tuple(self.state.cwds), False
        return (), True

    def substitute(self, node: Node) -> str | None:
        before = len(self.out.segments)
        self._inner_statements(node)
        added = self.out.segments[before:]
        if len(added) == 1 and added[0].output is not None:
            return added[0].output
        return None

    def run_inner(self, node: Node) -> None:
        self._inner_statements(node)

    def _inner_statements(self, node: Node) -> None:
        self.conditional += 1
        try:
            for child in node.named_children:
                self.visit(child, _IO())
        finally:
            self.conditional -= 1

    def word(self, node: Node) -> Word:
        if not self._enter():
            return Word((DYNAMIC_PART,), True, _text(node)[:80])
        try:
            return evaluate(node, self)
        finally:
            self.nesting[0] -= 1

    def _enter(self) -> bool:
        self.nesting[0] += 1
        if self.nesting[0] > MAX_NODE_DEPTH:
            self.nesting[0] -= 1
            self.out.parsed = False
            self.out.problems.append("the command nests too deeply")
            return False
        return True

    # --- the tree -----------------------------------------------------------------------------------

    def visit(self, node: Node, io: _IO) -> None:
        if len(self.out.segments) > MAX_SEGMENTS:
            self.out.parsed = False
            self.out.problems.append(f"more than {MAX_SEGMENTS} commands")
            return
        if not self._enter():
            return
        try:
            self._visit(node, io)
        finally:
            self.nesting[0] -= 1

    def _visit(self, node: Node, io: _IO) -> None:
        kind = node.type
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node, io)
        elif kind in EXPANSION_NODES:
            self.word(node)  # a substitution on its own line still runs its commands
        elif kind in ("comment", "heredoc_start", "heredoc_end"):
            return
        elif kind in CONDITIONAL_NODES:
            self.conditional += 1
            try:
                for child in node.named_children:
                    self.visit(child, io)
            finally:
                self.conditional -= 1
        else:
            for child in node.named_children:
                self.visit(child, io)

    def command(self, node: Node, io: _IO) -> None:
        assignments: list[str] = []
        name_node: Node | None = None
        arguments: list[Node] = []
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                assignments.append(_text(child.child_by_field_name("name")))
                value = child.child_by_field_name("value")
                if value is not None:
                    self.word(value)  # `X=$(…) cmd` runs the substitution
            elif kind == "command_name":
                name_node = child.named_children[0] if child.named_children else child
            elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                io = self.redirect(child, io)
            else:
                arguments.append(child)
        if name_node is None:
            for op, target in io.redirects:
                self.emit_segment(Segment([], redirects=[(op, target)], source=_text(node)))
            return
        words = [self.word(name_node), *(self.word(a) for a in arguments)]
        reasons = []
        if _has_expansion(name_node):
            reasons.append(f"the command name `{_text(name_node)}` is computed when it runs")
        self.emit(words, io, assignments=assignments, reasons=reasons, source=_text(node))

    def redirected(self, node: Node, io: _IO) -> None:
        body = node.child_by_field_name("body")
        following: list[Node] = []
        for child in node.named_children:
            if child.type in ("file_redirect", "herestring_redirect"):
                io = self.redirect(child, io)
            elif child.type == "heredoc_redirect":
                io = self.redirect(child, io)
                following += [c for c in child.named_children if c.type not in _HEREDOC_PARTS]
        pipeline = next((f for f in following if f.type == "pipeline"), None)
        if body is not None and pipeline is not None:
            self.pipeline_stages([body, *pipeline.named_children], io)
        elif body is not None:
            self.visit(body, io)
        self.conditional += 1
        try:
            for extra in following:
                if extra is not pipeline:
                    self.visit(extra, replace(io, stdin=None, stdin_kind="none"))
        finally:
            self.conditional -= 1

    def redirect(self, node: Node, io: _IO) -> _IO:
        kind = node.type
        if kind == "herestring_redirect":
            target = node.named_children[-1] if node.named_children else None
            word = self.word(target) if target is not None else Word.literal("")
            return io.with_stdin(word.static + "\n" if word.static is not None else None, "static" if word.static is not None else "pipe")
        if kind == "heredoc_redirect":
            for child in node.named_children:
                if child.type == "file_redirect":
                    io = self.redirect(child, io)
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            start = _text(next((c for c in node.named_children if c.type == "heredoc_start"), None))
            if body is None:
                return io.with_stdin("", "static")
            expands = not start.startswith(("'", '"', "\\")) and any(c.is_named and c.type != "heredoc_content" for c in body.children)
            if expands:
                for child in body.named_children:
                    if child.type in EXPANSION_NODES:
                        self.word(child)
            return io.with_stdin(_text(body), "pipe" if expands else "static")
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = node.child_by_field_name("destination")
        if destination is None:
            named = [c for c in node.named_children if c.type != "file_descriptor"]
            destination = named[-1] if named else None
        if destination is None:
            return io
        written = self.word(destination)
        if operator in (">&", "<&") and re.fullmatch(r"\d+-?|-", written.static or ""):
            return io  # `2>&1`: duplicating a descriptor names no file
        io = replace(io, redirects=(*io.redirects, (operator, written)))
        if operator == "<":
            io = io.with_stdin(None, "file")
        return io

    def pipeline(self, node: Node, io: _IO) -> None:
        self.pipeline_stages(list(node.named_children), io)

    def pipeline_stages(self, stages: list[Node], io: _IO) -> None:
        """Each stage reads the one before: known text when that stage prints something static."""
        previous: str | None = None
        self.conditional += 1
        try:
            for index, stage in enumerate(stages):
                if index == 0:
                    stage_io = io
                else:
                    stage_io = io.with_stdin(previous, "static" if previous is not None else "pipe")
                before = len(self.out.segments)
                self.visit(stage, stage_io)
                added = self.out.segments[before:]
                previous = added[-1].output if added and _single_stage(added) else None
        finally:
            self.conditional -= 1

    def list_(self, node: Node, io: _IO) -> None:
        children = node.named_children
        for index, child in enumerate(children):
            if index > 0:
                self.conditional += 1
            try:
                self.visit(child, io)
            finally:
                if index > 0:
                    self.conditional -= 1

    def assignment(self, node: Node, io: _IO) -> None:
        name = _text(node.child_by_field_name("name"))
        value = node.child_by_field_name("value")
        appending = any(c.type == "+=" for c in node.children)
        if value is None:
            self.assign(name, ("",), False)
        elif value.type == "array":
            words = [self.word(item) for item in value.named_children]
            self.assign(name, tuple(v for w in words for v in w.values), any(w.dynamic for w in words))
        else:
            word = self.word(value)
            self.assign(name, word.values, word.dynamic or appending)

    def assign(self, name: str, values: tuple[str, ...], dynamic: bool) -> None:
        if not name:
            return
        old = self.state.variables.get(name)
        if self.conditional and old is None:
            known, unknown = self.lookup(name)
            old = (frozenset(known), unknown)
        if self.conditional and old is not None:
            self.state.variables[name] = (old[0] | frozenset(values), old[1] or dynamic)
        else:
            self.state.variables[name] = (frozenset(values), dynamic)

    def declaration(self, node: Node, io: _IO) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, io)
            elif child.type in EXPANSION_NODES:
                self.word(child)

    def unset(self, node: Node, io: _IO) -> None:
        for child in node.named_children:
            if child.type in ("variable_name", "word"):
                self.assign(_text(child), ("",), False)

    def for_loop(self, node: Node, io: _IO) -> None:
        variable = _text(node.child_by_field_name("variable"))
        words = [self.word(v) for v in node.children_by_field_name("value")]
        self.conditional += 1
        try:
            if words:
                self.assign(variable, tuple(v for w in words for v in w.values), any(w.dynamic for w in words))
            else:
                self.assign(variable, (), True)  # `for x; do` loops over "$@"
            body = node.child_by_field_name("body")
            if body is not None:
                self.visit(body, io)
        finally:
            self.conditional -= 1

    def function_definition(self, node: Node, io: _IO) -> None:
        name = _text(node.child_by_field_name("name"))
        body = node.child_by_field_name("body")
        self.state.functions.add(name)
        if body is None:
            return
        before = len(self.out.segments)
        outer, self.function = self.function, name
        self.conditional += 1
        try:
            self.visit(body, io)
        finally:
            self.conditional -= 1
            self.function = outer
        recursive = any(name in s.names for s in self.out.segments[before:])
        if recursive and _spawns(body):
            self.out.fork_bomb = f"the function `{name}` starts copies of itself (a fork bomb)"

    def error(self, node: Node, io: _IO) -> None:
        self.out.parsed = False
        for child in node.named_children:
            self.visit(child, io)

    # --- one simple command -------------------------------------------------------------------------

    def emit(
        self,
        words: list[Word],
        io: _IO,
        *,
        assignments: Sequence[str] = (),
        reasons: Sequence[str] = (),
        wrappers: Sequence[str] = (),
        source: str = "",
    ) -> None:
        unwrapped = programs.strip_wrappers(words)
        if unwrapped.split_string is not None:
            split = programs.split_words(unwrapped.split_string)
            if split is None:
                self.out.parsed = False
                self.out.problems.append("an `env -S` string with unbalanced quotes")
                return
            self.emit(
                [Word.literal(w) for w in split], io, assignments=[*assignments, *unwrapped.assignments],
                reasons=reasons, wrappers=[*wrappers, *unwrapped.wrappers], source=source,
            )
            return
        segment = Segment(
            unwrapped.words,
            redirects=list(io.redirects),
            wrappers=[*wrappers, *unwrapped.wrappers],
            assignments=[*assignments, *unwrapped.assignments],
            stdin=io.stdin,
            stdin_kind=io.stdin_kind,
            cwds=self.state.cwds,
            dynamic=list(reasons),
            function=self.function,
            source=source,
        )
        if unwrapped.reads_stdin_args:
            segment.words = [*segment.words, *self._stdin_arguments(io)]
        if not segment.words:
            if segment.redirects:
                self.emit_segment(segment)
            return
        if segment.words[0].dynamic and not reasons:
            segment.dynamic.append(f"the command name `{segment.words[0].source}` is computed when it runs")
        if not segment.wrappers:
            segment.output = programs.static_output(segment.words, io.stdin if io.stdin_kind == "static" else None)
        self.emit_segment(segment)
        for name in sorted(segment.names):
            self._special(name, segment, io)

    def emit_segment(self, segment: Segment) -> None:
        self.out.segments.append(segment)

    def _stdin_arguments(self, io: _IO) -> list[Word]:
        if io.stdin_kind == "static" and io.stdin is not None:
            return [Word.literal(w) for w in io.stdin.split()]
        if io.stdin_kind == "none":
            return []
        return [Word((DYNAMIC_PART,), True, "<stdin>")]

    def _special(self, name: str, segment: Segment, io: _IO) -> None:
        args = segment.args
        if name in programs.SHELLS or name == "su":
            self._shell(name, segment, io)
        elif name == "eval":
            if all(a.static is not None for a in args):
                segment.container = True
                self.nested(" ".join(a.static or "" for a in args), io, "eval")
            else:
                segment.dynamic.append("`eval` runs a command built at run time")
        elif (family := programs.interpreter_family(name)) is not None:
            self._interpreter(family, segment, io)
        elif name == "find":
            for inner in programs.find_exec_commands(args):
                self.emit(inner, _IO(), wrappers=[*segment.wrappers, "find -exec"], source=segment.source)
        elif name in ("watch", "trap"):
            code = [a for a in args if not (a.static or "").startswith("-")]
            code = code[:1] if name == "trap" else code
            if code and all(a.static is not None for a in code):
                self.nested(" ".join(a.static or "" for a in code), _IO(), name)
            elif code:
                segment.dynamic.append(f"`{name}` runs a command built at run time")
        elif name == "alias":
            for arg in args:
                if arg.static and "=" in arg.static:
                    alias, value = arg.static.split("=", 1)
                    self.state.functions.add(alias)
                    self.nested(value, _IO(), "alias")
        elif name in ("cd", "pushd"):
            self._change_directory(args)
        elif name in STATE_READERS:
            for arg in args:
                if arg.static and not arg.static.startswith("-"):
                    self.assign(arg.static, (), True)
        elif name in self.state.functions:
            segment.container = True  # its body is analysed where it is defined

    def _shell(self, name: str, segment: Segment, io: _IO) -> None:
        source = programs.shell_code(name, segment.args)
        if source.kind == "string" and source.code is not None:
            if source.code.static is not None:
                segment.container = True
                self.nested(source.code.static, io, f"`{name} -c`")
            else:
                segment.dynamic.append(f"`{name} -c` runs a command string built at run time")
        elif source.kind == "stdin":
            if io.stdin_kind == "static" and io.stdin is not None:
                segment.container = True
                self.nested(io.stdin, _IO(), f"code piped into `{name}`")
            elif io.stdin_kind == "pipe":
                segment.dynamic.append(f"it pipes code into `{name}`, which runs whatever arrives")

    def _interpreter(self, family: str, segment: Segment, io: _IO) -> None:
        source = programs.interpreter_code(family, segment.args)
        if source.kind == "string" and source.code is not None:
            if source.code.dynamic:
                segment.dynamic.append(f"`{segment.name}` runs code built at run time")
            segment.inline_code = "\n".join(source.code.values)
        elif source.kind == "stdin" and io.stdin_kind in ("static", "pipe"):
            segment.dynamic.append(f"`{segment.name}` reads the code it runs from stdin")
            if io.stdin_kind == "static":
                segment.inline_code = io.stdin

    def _change_directory(self, args: list[Word]) -> None:
        targets = [a for a in args if not (a.static or "").startswith("-") or a.static == "-"]
        if not targets:
            new: frozenset[str] | None = frozenset({self.home})
        elif targets[0].dynamic or targets[0].static == "-" or self.state.cwds is None:
            new = None
        else:
            new = frozenset(
                os.path.normpath(os.path.join(cwd, value)) for cwd in self.state.cwds for value in targets[0].values
            )
        if new is None:
            self.state.cwds = None
        elif self.conditional and self.state.cwds is not None:
            self.state.cwds = self.state.cwds | new
        else:
            self.state.cwds = new


_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end", "file_redirect", "heredoc_content"})
_HANDLERS: dict[str, Any] = {
    "command": _Walker.command,
    "redirected_statement": _Walker.redirected,
    "pipeline": _Walker.pipeline,
    "list": _Walker.list_,
    "variable_assignment": _Walker.assignment,
    "declaration_command": _Walker.declaration,
    "unset_command": _Walker.unset,
    "for_statement": _Walker.for_loop,
    "function_definition": _Walker.function_definition,
    "ERROR": _Walker.error,
}


def _single_stage(added: list[Segment]) -> bool:
    """A pipeline stage whose output we may know: one command (plus any it contains)."""
    top = [s for s in added if not s.container]
    return len(top) == 1 and top[0] is added[-1]


def _has_expansion(node: Node) -> bool:
    if node.type in EXPANSION_NODES:
        return True
    return any(_has_expansion(child) for child in node.named_children)


def _spawns(node: Node) -> bool:
    """Whether a body starts something in the background or in a pipeline (what a fork bomb needs)."""
    if node.type == "pipeline" or (not node.is_named and node.type == "&"):
        return True
    return any(_spawns(child) for child in node.children)


def _error_hint(root: Node) -> str:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            snippet = _text(node)[:40].replace("\n", " ")
            what = f"missing `{node.type}`" if node.is_missing else f"a syntax error near `{snippet}`"
            return f"{what} at line {node.start_point[0] + 1}"
        stack.extend(reversed(node.children))
    return "a syntax error"
