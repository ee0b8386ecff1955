"""The walk over a bash syntax tree (tree-sitter-bash) that finds every simple command a line runs.

Statements, pipelines (each stage reads what the one before prints, when that is static), lists,
redirections and heredocs, assignments and loops, function bodies, substitutions; nested scripts
(`bash -c`, `eval`) get a walker of their own that shares one nesting budget, so no input can exhaust
Python's recursion limit. Simple commands are interpreted by ``shell_simple``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from catbuddy.safety.shell_model import ParsedCommand, Plumbing, Segment, WalkState
from catbuddy.safety.shell_simple import SimpleCommands
from catbuddy.safety.shell_words import DYNAMIC_PART, Word, evaluate

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


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


class Walker(SimpleCommands):
    """Walks one script's syntax tree; nested scripts (`bash -c`, `eval`) get a walker of their own."""

    def __init__(
        self, parser: Parser, out: ParsedCommand, state: WalkState, *, home: str, cwd: str, depth: int
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
        self.process_outputs: list[str | None] = []  # what each `<(…)` prints, when known statically
        self.fd_outputs: list[str | None] = []  # those of the command being emitted

    # --- entry points -----------------------------------------------------------------------------

    def script(self, text: str, io: Plumbing | None = None) -> None:
        tree = self.parser.parse(text.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.out.parsed = False
            self.out.problems.append(_error_hint(tree.root_node))
        self.visit(tree.root_node, io or Plumbing())

    def nested(self, code: str, io: Plumbing, kind: str) -> None:
        """Code run by a shell, `eval`, `trap`, … is analysed like the line itself."""
        if self.depth + 1 > MAX_NESTING:
            self.out.parsed = False
            self.out.problems.append(f"{kind} nested more than {MAX_NESTING} levels deep")
            return
        inner = Walker(self.parser, self.out, self.state.copy(), home=self.home, cwd=self.cwd, depth=self.depth + 1)
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
        if node.type == "process_substitution":  # `<(…)`: what it prints may be run (`source <(…)`)
            self.process_outputs.append(self.substitute(node))
            return
        self._inner_statements(node)

    def _inner_statements(self, node: Node) -> None:
        self.conditional += 1
        try:
            for child in node.named_children:
                self.visit(child, Plumbing())
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

    def visit(self, node: Node, io: Plumbing) -> None:
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

    def _visit(self, node: Node, io: Plumbing) -> None:
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

    def command(self, node: Node, io: Plumbing) -> None:
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
        start = len(self.process_outputs)
        words = [self.word(name_node), *(self.word(a) for a in arguments)]
        self.fd_outputs = self.process_outputs[start:]
        reasons = []
        if _has_expansion(name_node):
            reasons.append(f"the command name `{_text(name_node)}` is computed when it runs")
        self.emit(words, io, assignments=assignments, reasons=reasons, source=_text(node))

    def redirected(self, node: Node, io: Plumbing) -> None:
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

    def redirect(self, node: Node, io: Plumbing) -> Plumbing:
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

    def pipeline(self, node: Node, io: Plumbing) -> None:
        self.pipeline_stages(list(node.named_children), io)

    def pipeline_stages(self, stages: list[Node], io: Plumbing) -> None:
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

    def list_(self, node: Node, io: Plumbing) -> None:
        children = node.named_children
        for index, child in enumerate(children):
            if index > 0:
                self.conditional += 1
            try:
                self.visit(child, io)
            finally:
                if index > 0:
                    self.conditional -= 1

    def assignment(self, node: Node, io: Plumbing) -> None:
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
        self.out.assigned.add(name)
        old = self.state.variables.get(name)
        if self.conditional and old is None:
            known, unknown = self.lookup(name)
            old = (frozenset(known), unknown)
        if self.conditional and old is not None:
            self.state.variables[name] = (old[0] | frozenset(values), old[1] or dynamic)
        else:
            self.state.variables[name] = (frozenset(values), dynamic)

    def declaration(self, node: Node, io: Plumbing) -> None:
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assignment(child, io)
            elif child.type in EXPANSION_NODES:
                self.word(child)

    def unset(self, node: Node, io: Plumbing) -> None:
        for child in node.named_children:
            if child.type in ("variable_name", "word"):
                self.assign(_text(child), ("",), False)

    def for_loop(self, node: Node, io: Plumbing) -> None:
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

    def function_definition(self, node: Node, io: Plumbing) -> None:
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

    def error(self, node: Node, io: Plumbing) -> None:
        self.out.parsed = False
        for child in node.named_children:
            self.visit(child, io)


_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end", "file_redirect", "heredoc_content"})
_HANDLERS: dict[str, Any] = {
    "command": Walker.command,
    "redirected_statement": Walker.redirected,
    "pipeline": Walker.pipeline,
    "list": Walker.list_,
    "variable_assignment": Walker.assignment,
    "declaration_command": Walker.declaration,
    "unset_command": Walker.unset,
    "for_statement": Walker.for_loop,
    "function_definition": Walker.function_definition,
    "ERROR": Walker.error,
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
