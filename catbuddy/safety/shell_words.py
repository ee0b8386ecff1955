"""What a bash word can expand to, from its tree-sitter node: quotes, escapes, `$'…'`, braces, `~`,
variables and command substitutions.

A word is evaluated to the set of strings it may become (``Word.values``), not to one string: a brace
expansion gives several, a variable assigned in two branches gives both values, and a part that is only
known when the command runs (``$(curl …)``, an unset variable, ``$1``) makes the word ``dynamic`` and is
shown as ``DYNAMIC_PART``. The deny rules check every value; the approval policy treats a dynamic word as
"cannot be determined statically". Values are capped, so a word like ``{a,b}{c,d}{e,f}…`` stays cheap.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tree_sitter import Node

MAX_VALUES = 64  # alternatives kept per word; beyond this the word counts as dynamic
MAX_RANGE = 64  # `{1..N}` ranges longer than this are not expanded
DYNAMIC_PART = "${…}"  # stands for a part only known at run time
FD_PATH = "/dev/fd/63"  # what `<(…)` expands to
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
                "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S)
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?$|^([A-Za-z])\.\.([A-Za-z])$")


@dataclass(frozen=True)
class Word:
    """One word of a command after expansion: every value it may take, and whether part is unknown."""

    values: tuple[str, ...]
    dynamic: bool = False
    source: str = ""

    @property
    def static(self) -> str | None:
        """The one value of a word fully known before it runs, else None."""
        return self.values[0] if not self.dynamic and len(self.values) == 1 else None

    @classmethod
    def literal(cls, text: str) -> Word:
        return cls((text,), False, text)


class Scope(Protocol):
    """What the evaluator asks the walker: variable values and what a substitution prints."""

    home: str

    def lookup(self, name: str) -> tuple[tuple[str, ...], bool]: ...

    def substitute(self, node: Node) -> str | None: ...

    def run_inner(self, node: Node) -> None:
        """Record the commands nested anywhere inside ``node`` (`<(…)`, `$(( $(…) ))`, `${X:-$(…)}`)."""


@dataclass
class _Opaque:
    """A part of a word that brace expansion does not look into (quoted text, an expansion)."""

    values: tuple[str, ...]
    dynamic: bool = False
    split: bool = False  # an unquoted expansion: its value is split into words


Atom = str | _Opaque  # a str atom is one unquoted character


@dataclass
class _Builder:
    atoms: list[Atom] = field(default_factory=list)

    def unquoted(self, text: str) -> None:
        self.atoms.extend(text)

    def quoted(self, text: str) -> None:
        self.atoms.append(_Opaque((text,)))

    def opaque(self, values: tuple[str, ...], dynamic: bool, split: bool) -> None:
        self.atoms.append(_Opaque(values or (DYNAMIC_PART,), dynamic or not values, split))


def evaluate(node: Node, scope: Scope) -> Word:
    builder = _Builder()
    _collect(node, scope, builder, quoted=False)
    text = node.text.decode("utf-8", "replace") if node.text else ""
    pwd: str | None = None
    if "~+" in text:
        values, dynamic = scope.lookup("PWD")
        pwd = values[0] if len(values) == 1 and not dynamic else None
    return _finish(builder.atoms, scope.home, text, pwd)


def evaluate_text(text: str, home: str) -> Word:
    """A word given as plain text (e.g. split out of an `env -S` string): no quotes or expansions."""
    return _finish(list(text), home, text)


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def _collect(node: Node, scope: Scope, out: _Builder, *, quoted: bool) -> None:
    kind = node.type
    if kind == "raw_string":
        out.quoted(_text(node)[1:-1])
    elif kind == "ansi_c_string":
        out.quoted(decode_ansi_c(_text(node)[2:-1]))
    elif kind in ("string", "translated_string"):
        for child in node.children:
            if child.type == "string_content":
                out.quoted(_unescape_double_quoted(_text(child)))
            elif child.is_named:
                _collect(child, scope, out, quoted=True)
    elif kind == "concatenation":
        for child in node.children:
            _collect(child, scope, out, quoted=quoted)
    elif kind == "simple_expansion" or kind == "expansion":
        values, dynamic = _expansion(node, scope)
        out.opaque(values, dynamic, split=not quoted)
    elif kind == "command_substitution":
        printed = scope.substitute(node)
        if printed is None:
            out.opaque((), True, split=not quoted)
        else:
            out.opaque((printed.rstrip("\n"),), False, split=not quoted)
    elif kind == "process_substitution":
        scope.run_inner(node)  # records what it prints, for `source <(…)` and `bash <(…)`
        out.quoted(FD_PATH)
    elif kind == "arithmetic_expansion":
        scope.run_inner(node)
        out.opaque((), True, split=False)
    elif kind == "word" and not quoted:
        _unquoted_word(_text(node), out)
    elif quoted:
        out.quoted(_text(node))
    else:  # number, brace_expression, extglob_pattern, …: text as written
        _unquoted_word(_text(node), out)


def _unquoted_word(text: str, out: _Builder) -> None:
    """Backslash quotes the next character (`r\\m` is `rm`); a backslash-newline joins lines."""
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.quoted(text[i + 1])
            i += 2
            continue
        out.atoms.append(ch)
        i += 1


def _unescape_double_quoted(text: str) -> str:
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def decode_ansi_c(body: str) -> str:
    """The text of `$'…'`: `$'\\x72\\x6d'` is `rm`."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        head = code[0]
        try:
            if head == "x":
                return chr(int(code[1:], 16))
            if head in "uU":
                return chr(int(code[1:], 16))
            if head in "01234567":
                return chr(int(code, 8) & 0xFF)
        except (ValueError, OverflowError):
            return match.group(0)
        if head == "c" and len(code) == 2:
            return chr(ord(code[1].upper()) ^ 0x40)
        return _ANSI_SIMPLE.get(code, "\\" + code)

    return _ANSI_ESCAPE.sub(one, body)


def _expansion(node: Node, scope: Scope) -> tuple[tuple[str, ...], bool]:
    """`$NAME`, `${NAME}`: the variable's values. Anything fancier (`${X:-/}`, `$1`, `$@`) is dynamic,
    but a literal default or alternative is kept as a possible value."""
    named = [c for c in node.children if c.is_named]
    if len(named) == 1 and named[0].type == "variable_name":
        return scope.lookup(_text(named[0]))
    scope.run_inner(node)
    extra = tuple(_text(c) for c in named[1:] if c.type in ("word", "string", "raw_string"))
    if named and named[0].type == "variable_name":
        values, _ = scope.lookup(_text(named[0]))
        return tuple(dict.fromkeys(values + tuple(v.strip("'\"") for v in extra))), True
    return (), True


# --- brace expansion, tilde, splitting -----------------------------------------------------------------


def _finish(atoms: list[Atom], home: str, source: str, pwd: str | None = None) -> Word:
    alternatives = _braces(atoms)
    values: list[str] = []
    dynamic = len(alternatives) > MAX_VALUES
    for alternative in alternatives[:MAX_VALUES]:
        alternative = _tilde(alternative, home, pwd)
        parts: list[tuple[str, ...]] = []
        for atom in alternative:
            if isinstance(atom, str):
                parts.append((atom,))
            else:
                dynamic = dynamic or atom.dynamic
                parts.append(_split_values(atom) if atom.split else atom.values)
        for combination in itertools.islice(itertools.product(*parts), MAX_VALUES):
            values.append("".join(combination))
        if _product_size(parts) > MAX_VALUES:
            dynamic = True
    unique = tuple(dict.fromkeys(values))[:MAX_VALUES] or ("",)
    return Word(unique, dynamic, source)


def _product_size(parts: Iterable[tuple[str, ...]]) -> int:
    size = 1
    for part in parts:
        size *= max(len(part), 1)
        if size > MAX_VALUES:
            break
    return size


def _split_values(atom: _Opaque) -> tuple[str, ...]:
    """An unquoted expansion is split on whitespace: `X="-rf /"; rm $X` passes `-rf` and `/`.
    Every piece is kept as a possible value, next to the whole."""
    out: list[str] = []
    for value in atom.values:
        out.append(value)
        pieces = value.split()
        if len(pieces) > 1:
            out.extend(pieces)
    return tuple(dict.fromkeys(out))


def _tilde(atoms: list[Atom], home: str, pwd: str | None = None) -> list[Atom]:
    """`~` is the home directory, `~name` that user's (when the user exists), `~+` the working directory
    (`$PWD`) and `~-` the previous one (`$OLDPWD`, unknown here)."""
    if not atoms or atoms[0] != "~":
        return atoms
    end = 1
    while end < len(atoms) and isinstance(atoms[end], str) and atoms[end] != "/":
        end += 1
    name = "".join(a for a in atoms[1:end] if isinstance(a, str))
    if not name:
        return [_Opaque((home,)), *atoms[1:]]
    if name == "+":
        return [_Opaque((pwd,)) if pwd else _Opaque((DYNAMIC_PART,), True), *atoms[end:]]
    if name == "-":
        return [_Opaque((DYNAMIC_PART,), True), *atoms[end:]]
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
        expanded = os.path.expanduser("~" + name)
        if expanded != "~" + name:
            return [_Opaque((expanded,)), *atoms[end:]]
    return atoms


def _braces(atoms: list[Atom], budget: int = MAX_VALUES + 1) -> list[list[Atom]]:
    """Bash brace expansion on the unquoted characters: `{/,}` gives `/` and nothing, `a{1..3}` three."""
    start = _find_brace(atoms)
    if start is None:
        return [atoms]
    opening, closing, commas = start
    prefix, body, suffix = atoms[:opening], atoms[opening + 1 : closing], atoms[closing + 1 :]
    if commas:
        bounds = [opening, *commas, closing]
        choices = [atoms[a + 1 : b] for a, b in itertools.pairwise(bounds)]
    else:
        expanded = _range(body)
        if expanded is None:  # not an expansion: the braces are literal; look further on
            rest = _braces(suffix, budget)
            return [[*atoms[: closing + 1], *r] for r in rest][:budget]
        choices = [list(item) for item in expanded]
    out: list[list[Atom]] = []
    for choice in choices:
        for tail in _braces([*choice, *suffix], budget):
            out.append([*prefix, *tail])
            if len(out) >= budget:
                return out
    return out


def _find_brace(atoms: list[Atom]) -> tuple[int, int, list[int]] | None:
    """The first `{` with its matching `}` and the top-level commas between them."""
    for opening, atom in enumerate(atoms):
        if atom != "{":
            continue
        depth = 0
        commas: list[int] = []
        for index in range(opening + 1, len(atoms)):
            item = atoms[index]
            if item == "{":
                depth += 1
            elif item == "}":
                if depth == 0:
                    return opening, index, commas
                depth -= 1
            elif item == "," and depth == 0:
                commas.append(index)
    return None


def _range(body: list[Atom]) -> list[str] | None:
    if not all(isinstance(a, str) for a in body):
        return None
    match = _RANGE.match("".join(a for a in body if isinstance(a, str)))
    if match is None:
        return None
    if match.group(4):
        low, high = ord(match.group(4)), ord(match.group(5))
        step = 1 if high >= low else -1
        letters = [chr(c) for c in range(low, high + step, step)]
        return letters if len(letters) <= MAX_RANGE else None
    first, last = int(match.group(1)), int(match.group(2))
    step = abs(int(match.group(3) or 1)) or 1
    step = step if last >= first else -step
    count = abs(last - first) // abs(step) + 1
    if count > MAX_RANGE:
        return None
    return [str(first + i * step) for i in range(count)]
