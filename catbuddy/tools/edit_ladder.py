"""Where an edit's ``old_string`` is in a file: a ladder of ever more tolerant matching stages.

Real models make small slips when they copy text back: trailing whitespace, indentation, over-escaped
``\\n`` or ``\\"``, a blank line too many around the block. Each slip used to cost a refusal and a model
round trip. The ladder tries, in order: exact; line-trimmed (trailing whitespace); whitespace-normalised
(runs of spaces inside lines); indentation-flexible (leading whitespace, the replacement re-indented by
the same offset); escape-normalised; then the same line stages with the surrounding blank lines trimmed.

A stage applies only when it finds exactly one place (or, with ``replace_all``, non-overlapping places);
otherwise the next stage is tried, and in the end the edit is refused. Every fuzzy stage compares whole
lines whose text is equal once whitespace or escapes are set aside: no stage guesses at lines whose
content differs (opencode's "block anchor" replacer does, and rewrites code the model never quoted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from catbuddy.errors import CatbuddyError

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "$": "$", "\n": "\n"}
ESCAPE_RE = re.compile(r"\\([ntr'\"`\\$\n])")
SPACE_RUN = re.compile(r"[ \t]+")


class Stage(StrEnum):
    EXACT = "exact"
    LINE_TRIMMED = "line-trimmed"
    WHITESPACE = "whitespace-normalised"
    INDENTATION = "indentation-flexible"
    ESCAPES = "escape-normalised"
    BLANK_LINES = "blank-lines-trimmed"


STAGE_NOTES = {
    Stage.LINE_TRIMMED: "old_string differed from the file in trailing whitespace",
    Stage.WHITESPACE: "old_string differed from the file in spacing inside lines",
    Stage.INDENTATION: "old_string differed from the file in indentation; the replacement was re-indented",
    Stage.ESCAPES: 'old_string was over-escaped (e.g. \\n or \\" written for a newline or a quote)',
    Stage.BLANK_LINES: "old_string had blank lines around it that the file does not",
}


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Found:
    stage: Stage
    spans: list[Span]

    @property
    def first(self) -> int:
        return self.spans[0].start

    def apply(self, text: str) -> str:
        parts, at = [], 0
        for span in self.spans:
            parts += [text[at : span.start], span.replacement]
            at = span.end
        return "".join(parts) + text[at:]


class Ambiguous(CatbuddyError):
    """old_string matches several places exactly and replace_all is off."""

    def __init__(self, count: int, lines: list[int]) -> None:
        super().__init__(f"old_string occurs {count} times")
        self.count, self.lines = count, lines


def find_edit(text: str, old: str, new: str, *, replace_all: bool, fuzzy: bool = True) -> Found | None:
    """The stage and places where ``old`` is in ``text``, with what replaces each; None when no stage
    finds it once. Raises Ambiguous when the exact text occurs several times (more context is needed)."""
    count = text.count(old)
    if count == 1 or (count > 1 and replace_all):
        return Found(Stage.EXACT, _exact_spans(text, old, new))
    if count > 1:
        raise Ambiguous(count, exact_lines(text, old))
    if not fuzzy:
        return None
    lines = text.split("\n")
    for stage, key in LINE_STAGES:
        found = _line_stage(stage, lines, old, new, key, replace_all)
        if found:
            return found
    found = _escape_stage(text, old, new, replace_all)
    if found:
        return found
    trimmed_old, trimmed_new = _trim_blank_lines(old, new)
    if trimmed_old != old and trimmed_old.strip():
        # Whole lines only: the blank lines said the model quoted whole lines, so a match inside a
        # line ("text" in "text.") would be a guess.
        for _, key in LINE_STAGES:
            found = _line_stage(Stage.BLANK_LINES, lines, trimmed_old, trimmed_new, key, replace_all)
            if found:
                return found
    return None


def exact_lines(text: str, needle: str) -> list[int]:
    lines, start = [], 0
    while (index := text.find(needle, start)) >= 0:
        lines.append(text.count("\n", 0, index) + 1)
        start = index + max(len(needle), 1)
    return lines


def _exact_spans(text: str, old: str, new: str) -> list[Span]:
    spans, start = [], 0
    while (index := text.find(old, start)) >= 0:
        spans.append(Span(index, index + len(old), new))
        start = index + len(old)
    return spans


# --- line stages -------------------------------------------------------------------------------------


def _trailing(line: str) -> str:
    return line.rstrip()


def _spacing(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return indent + SPACE_RUN.sub(" ", line.strip())


def _stripped(line: str) -> str:
    return SPACE_RUN.sub(" ", line.strip())


LINE_STAGES: list[tuple[Stage, Callable[[str], str]]] = [
    (Stage.LINE_TRIMMED, _trailing),
    (Stage.WHITESPACE, _spacing),
    (Stage.INDENTATION, _stripped),
]


def _split_block(block: str) -> tuple[list[str], bool]:
    """A block's lines, and whether it ended with a newline (its last line then is not a line)."""
    lines = block.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        return lines[:-1], True
    return lines, False


def _line_stage(
    stage: Stage, lines: list[str], old: str, new: str, key: Callable[[str], str], replace_all: bool
) -> Found | None:
    want, old_eol = _split_block(old)
    if not any(line.strip() for line in want):
        return None
    target = [key(line) for line in want]
    keyed = [key(line) for line in lines]
    size = len(want)
    starts = [i for i in range(len(lines) - size + 1) if keyed[i : i + size] == target]
    starts = _non_overlapping(starts, size)
    if not starts or (len(starts) > 1 and not replace_all):
        return None
    offsets = _line_offsets(lines)
    spans = []
    for i in starts:
        window = lines[i : i + size]
        replacement = _reindent(new, want, window)
        start = offsets[i]
        end = offsets[i + size - 1] + len(lines[i + size - 1])
        if old_eol and (not new or new.endswith("\n")):
            if i + size < len(lines):
                end += 1  # the newline after the block
            elif replacement.endswith("\n"):
                replacement = replacement[:-1]  # the file's last line has no newline to replace
        spans.append(Span(start, end, replacement))
    return Found(stage, spans)


def _non_overlapping(starts: list[int], size: int) -> list[int]:
    kept: list[int] = []
    for start in starts:
        if not kept or start >= kept[-1] + size:
            kept.append(start)
    return kept


def _line_offsets(lines: list[str]) -> list[int]:
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    return offsets


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _reindent(new: str, want: list[str], window: list[str]) -> str:
    """``new`` with the file's indentation where the model's differed. Each indentation the model used in
    old_string maps to the file's; when one maps to several (the model flattened a block), new_string's
    lines follow old_string's line for line if they are as many, else the first line's offset."""
    pairs = [(_indent(w), _indent(f)) for w, f in zip(want, window, strict=True) if w.strip()]
    if all(had == have for had, have in pairs):
        return new
    mapping: dict[str, str] = {}
    consistent = True
    for had, have in pairs:
        consistent = consistent and mapping.setdefault(had, have) == have
    lines = new.split("\n")
    positional = not consistent and len(lines) == len(want)
    first_had, first_have = pairs[0]
    out = []
    for n, line in enumerate(lines):
        if not line.strip():
            out.append(line)
            continue
        indent, body = _indent(line), line.lstrip(" \t")
        if consistent and indent in mapping:
            out.append(mapping[indent] + body)
        elif positional and want[n].strip():
            had, have = _indent(want[n]), _indent(window[n])
            out.append(_shift(indent, had, have) + body)
        else:
            out.append(_shift(indent, first_had, first_have) + body)
    return "\n".join(out)


def _shift(indent: str, had: str, have: str) -> str:
    """``indent`` moved by the offset from ``had`` to ``have``."""
    if indent.startswith(had):
        return have + indent[len(had) :]
    return have[: max(len(have) - (len(had) - len(indent)), 0)]


# --- escapes and blank lines ---------------------------------------------------------------------------


def unescape(text: str, kinds: set[str] | None = None) -> str:
    return ESCAPE_RE.sub(lambda m: ESCAPES[m[1]] if kinds is None or m[1] in kinds else m[0], text)


def _escape_stage(text: str, old: str, new: str, replace_all: bool) -> Found | None:
    kinds = {m[1] for m in ESCAPE_RE.finditer(old)}
    if not kinds:
        return None
    plain = unescape(old)
    count = text.count(plain)
    if count == 0 or (count > 1 and not replace_all):
        return None
    # The escapes the model added to old_string were added to new_string too: undo the same ones there.
    return Found(Stage.ESCAPES, _exact_spans(text, plain, unescape(new, kinds)))


def _trim_blank_lines(old: str, new: str) -> tuple[str, str]:
    """old_string without the blank lines around it, and new_string without as many of its own; a final
    newline stays (it says the block ends at a line end)."""

    def trim(block: str) -> tuple[list[str], bool, int, int]:
        lines, eol = _split_block(block)
        head = 0
        while head < len(lines) - 1 and not lines[head].strip():
            head += 1
        tail = len(lines)
        while tail > head + 1 and not lines[tail - 1].strip():
            tail -= 1
        return lines[head:tail], eol, head, len(lines) - tail

    kept, eol, head, tail = trim(old)
    lines, new_eol = _split_block(new)
    while head and len(lines) > 1 and not lines[0].strip():
        lines, head = lines[1:], head - 1
    while tail and len(lines) > 1 and not lines[-1].strip():
        lines, tail = lines[:-1], tail - 1
    return "\n".join(kept) + ("\n" if eol else ""), "\n".join(lines) + ("\n" if new_eol else "")
