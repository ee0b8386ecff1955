"""One simple command as the walk meets it: wrappers stripped, and what it runs besides itself — the code of
`bash -c`, `eval`, `trap`, `watch`, `alias`, a static string piped into a shell, `find -exec`, `xargs` —
and what it changes for later commands (`cd`, `read`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from catbuddy.safety import shell_programs as programs
from catbuddy.safety.shell_model import ParsedCommand, Plumbing, Segment, WalkState
from catbuddy.safety.shell_words import DYNAMIC_PART, FD_PATH, Word

STATE_READERS = frozenset({"read", "mapfile", "readarray", "getopts"})


class SimpleCommands:
    """The simple-command half of ``shell_walk.Walker`` (which provides the attributes and ``nested``)."""

    out: ParsedCommand
    state: WalkState
    home: str
    conditional: int
    function: str | None
    fd_outputs: list[str | None]  # what the `<(…)` of the command being emitted print (None: unknown)

    def nested(self, code: str, io: Plumbing, kind: str) -> None:
        raise NotImplementedError

    def assign(self, name: str, values: tuple[str, ...], dynamic: bool) -> None:
        raise NotImplementedError

    def emit(
        self,
        words: list[Word],
        io: Plumbing,
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

    def _stdin_arguments(self, io: Plumbing) -> list[Word]:
        if io.stdin_kind == "static" and io.stdin is not None:
            return [Word.literal(w) for w in io.stdin.split()]
        if io.stdin_kind == "none":
            return []
        return [Word((DYNAMIC_PART,), True, "<stdin>")]

    def _special(self, name: str, segment: Segment, io: Plumbing) -> None:
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
                self.emit(inner, Plumbing(), wrappers=[*segment.wrappers, "find -exec"], source=segment.source)
        elif name in ("watch", "trap"):
            code = [a for a in args if not (a.static or "").startswith("-")]
            code = code[:1] if name == "trap" else code
            if code and all(a.static is not None for a in code):
                self.nested(" ".join(a.static or "" for a in code), Plumbing(), name)
            elif code:
                segment.dynamic.append(f"`{name}` runs a command built at run time")
        elif name == "alias":
            for arg in args:
                if arg.static and "=" in arg.static:
                    alias, value = arg.static.split("=", 1)
                    self.state.functions.add(alias)
                    self.nested(value, Plumbing(), "alias")
        elif name in ("cd", "pushd"):
            self._change_directory(args)
        elif name in STATE_READERS:
            for arg in args:
                if arg.static and not arg.static.startswith("-"):
                    self.assign(arg.static, (), True)
        elif name in ("source", "."):
            self._source(name, segment, io)
        elif name in self.state.functions:
            segment.container = True  # its body is analysed where it is defined

    def _source(self, name: str, segment: Segment, io: Plumbing) -> None:
        """`source <(…)` runs what the substitution prints; a script file is a program like any other."""
        script = next((a for a in segment.args if not (a.static or "").startswith("-")), None)
        if script is not None and script.static == FD_PATH:
            self._run_substituted(name, segment)

    def _run_substituted(self, name: str, segment: Segment) -> None:
        printed = self.fd_outputs[0] if self.fd_outputs else None
        if printed is None:
            segment.dynamic.append(f"`{name} <(…)` runs the output of a command, known only when it runs")
            return
        segment.container = True
        self.nested(printed, Plumbing(), f"`{name} <(…)`")

    def _shell(self, name: str, segment: Segment, io: Plumbing) -> None:
        source = programs.shell_code(name, segment.args)
        if source.kind == "file" and source.code is not None and source.code.static == FD_PATH:
            self._run_substituted(name, segment)
            return
        if source.kind == "string" and source.code is not None:
            if source.code.static is not None:
                segment.container = True
                self.nested(source.code.static, io, f"`{name} -c`")
            else:
                segment.dynamic.append(f"`{name} -c` runs a command string built at run time")
        elif source.kind == "stdin":
            if io.stdin_kind == "static" and io.stdin is not None:
                segment.container = True
                self.nested(io.stdin, Plumbing(), f"code piped into `{name}`")
            elif io.stdin_kind == "pipe":
                segment.dynamic.append(f"it pipes code into `{name}`, which runs whatever arrives")

    def _interpreter(self, family: str, segment: Segment, io: Plumbing) -> None:
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
