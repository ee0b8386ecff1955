"""Parsing a Dream answer: exactly two sections, each a list of ADD / UPDATE n / DELETE n / NONE lines.

Parsing checks the shape only; whether the numbers exist and what the operations do to a file is
``apply.py``'s job. Every problem is said in words the model can act on, because the reason goes back to
it with its rejected answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from catbuddy.memory.paths import GLOBAL, PROJECT

SECTION_TITLES = {GLOBAL: "User Profile", PROJECT: "Project Context"}
MAX_PROBLEMS_SHOWN = 5
MAX_LINE_SHOWN = 120

_HEADING = re.compile(r"^\s*#{1,3}\s*(?P<title>[^#]*?)\s*:?\s*#*\s*$")
_MARKER = r"^\s*(?:[-*+]\s*)?"
_ADD = re.compile(_MARKER + r"ADD\s*:\s*(?P<text>.*?)\s*$", re.IGNORECASE)
_UPDATE = re.compile(_MARKER + r"UPDATE\s+\[?(?P<n>\d+)\]?\s*:\s*(?P<text>.*?)\s*$", re.IGNORECASE)
_DELETE = re.compile(_MARKER + r"DELETE\s+\[?(?P<n>\d+)\]?\s*\.?\s*$", re.IGNORECASE)
_NONE = re.compile(_MARKER + r"NONE\s*\.?\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_THINKING = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)  # reasoning models

ADD, UPDATE, DELETE, NONE = "ADD", "UPDATE", "DELETE", "NONE"


@dataclass(frozen=True)
class Operation:
    kind: str  # ADD, UPDATE, DELETE or NONE
    number: int = 0  # the bullet an UPDATE or DELETE names
    text: str = ""  # the fact an ADD or UPDATE writes


@dataclass
class ParsedAnswer:
    sections: dict[str, list[Operation]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def changes(self, key: str) -> list[Operation]:
        return [op for op in self.sections.get(key, []) if op.kind != NONE]


def _shown(line: str) -> str:
    line = line.strip()
    return line if len(line) <= MAX_LINE_SHOWN else line[: MAX_LINE_SHOWN - 1] + "…"


def _unfence(lines: list[str]) -> list[str]:
    """An answer wrapped in one ``` fence is read as if it were not."""
    body = [line for line in lines if line.strip()]
    if len(body) >= 2 and _FENCE.match(body[0]) and _FENCE.match(body[-1]):
        first, last = lines.index(body[0]), len(lines) - 1 - lines[::-1].index(body[-1])
        return lines[first + 1 : last]
    return lines


def _section_key(title: str) -> str | None:
    wanted = " ".join(title.split()).casefold()
    return next((key for key, name in SECTION_TITLES.items() if name.casefold() == wanted), None)


def parse_operation(line: str) -> Operation | None:
    for pattern, kind in ((_ADD, ADD), (_UPDATE, UPDATE), (_DELETE, DELETE), (_NONE, NONE)):
        match = pattern.match(line)
        if match:
            groups = match.groupdict()
            return Operation(kind, int(groups.get("n") or 0), (groups.get("text") or "").strip())
    return None


def parse_answer(answer: str) -> ParsedAnswer:
    parsed = ParsedAnswer()
    problems: list[str] = []
    current: str | None = None
    for line in _unfence(_THINKING.sub("", answer).splitlines()):
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            key = _section_key(heading.group("title"))
            if key is None:
                problems.append(
                    f"unknown section {_shown(line)!r}: only `## User Profile` and `## Project Context`"
                )
            elif key in parsed.sections:
                problems.append(f"the section `## {SECTION_TITLES[key]}` appears twice")
            else:
                parsed.sections[key] = []
            current = key
            continue
        if current is None:
            problems.append(f"text outside the two sections: {_shown(line)!r}")
            continue
        operation = parse_operation(line)
        if operation is None:
            problems.append(
                f"in `## {SECTION_TITLES[current]}`, {_shown(line)!r} is not an operation "
                "(`- ADD: <fact>`, `- UPDATE <n>: <new text>`, `- DELETE <n>` or `- NONE`)"
            )
        elif operation.kind in (ADD, UPDATE) and not operation.text:
            problems.append(
                f"in `## {SECTION_TITLES[current]}`, {_shown(line)!r} has no text after the colon"
            )
        else:
            parsed.sections[current].append(operation)
    for key, title in SECTION_TITLES.items():
        if key not in parsed.sections:
            problems.append(f"the section `## {title}` is missing")
        elif not parsed.sections[key] and not any(title in p for p in problems):
            problems.append(f"the section `## {title}` is empty: write `- NONE` when nothing changes")
    if len(problems) > MAX_PROBLEMS_SHOWN:
        problems = problems[:MAX_PROBLEMS_SHOWN] + [f"and {len(problems) - MAX_PROBLEMS_SHOWN} more problems"]
    parsed.problems = problems
    return parsed
