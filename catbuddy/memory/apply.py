"""Validating a parsed Dream answer against the files it changes, and computing their new text.

The rules are code, not prompt (docs/architecture.md §13): numbers must exist and be named once; no
run deletes more than a third of a file's numbered lines; duplicates of what is already there (case,
whitespace, a leading date and final punctuation ignored) are skipped; nothing that looks like a
secret is stored; each file stays within ``memory_max_lines`` and ``memory_max_bytes`` (a file already
over them by hand may not grow). A problem is a sentence for the model's retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from catbuddy.memory.document import ADD_HEADING, HEADING, NEW_FILE_TITLE, MemoryDoc, normalise, replace_fact
from catbuddy.memory.operations import ADD, DELETE, SECTION_TITLES, UPDATE, Operation
from catbuddy.redact import find_secret, mask_secrets

MAX_DELETE_SHARE = 3  # a run deletes at most 1/3 of a file's numbered lines


@dataclass(frozen=True)
class Limits:
    max_lines: int
    max_bytes: int


@dataclass
class FilePlan:
    key: str  # "global" or "project"
    path: Path
    before: str | None  # the file as read (None: it did not exist)
    after: str  # the text Dream would write
    added: int = 0
    updated: int = 0
    deleted: int = 0
    skipped: list[str] = field(default_factory=list)  # duplicates and no-op updates, said in words

    @property
    def changed(self) -> bool:
        return self.added + self.updated + self.deleted > 0 and self.after != (self.before or "")


@dataclass
class Checked:
    plan: FilePlan
    problems: list[str] = field(default_factory=list)
    over_caps: bool = False  # the problems include the size caps: the retry asks to merge


def _where(key: str) -> str:
    return f"`## {SECTION_TITLES[key]}`"


def count_lines(text: str) -> int:
    return len(text.splitlines())


def check_file(
    key: str,
    path: Path,
    before: str | None,
    operations: Sequence[Operation],
    limits: Limits,
    secrets: Sequence[str] = (),
) -> Checked:
    doc = MemoryDoc.parse(before)
    plan = FilePlan(key, path, before, before or "")
    checked = Checked(plan)
    problems = checked.problems
    targeted: dict[int, str] = {}
    for op in operations:
        if op.kind in (UPDATE, DELETE):
            if doc.item(op.number) is None:
                have = (
                    f"its numbered lines are [1]–[{len(doc.items)}]"
                    if doc.items
                    else "it has no numbered lines"
                )
                problems.append(f"{op.kind} {op.number} in {_where(key)}: there is no [{op.number}] ({have})")
            elif op.number in targeted:
                problems.append(
                    f"[{op.number}] in {_where(key)} is named twice ({targeted[op.number]} and {op.kind})"
                )
            else:
                targeted[op.number] = op.kind
        if op.kind in (ADD, UPDATE):
            what = find_secret(op.text, secrets)
            if what:
                problems.append(
                    f"{op.kind} in {_where(key)} holds what looks like {what} ({mask_secrets(op.text, secrets)!r}): "
                    "secrets, tokens and passwords are never stored in memory; leave them out"
                )
    deletes = sum(1 for op in operations if op.kind == DELETE)
    allowed = len(doc.items) // MAX_DELETE_SHARE
    if deletes > allowed:
        problems.append(
            f"{_where(key)} deletes {deletes} of its {len(doc.items)} numbered lines; a run may delete at most "
            f"{allowed} (a third). Keep what is still true, UPDATE what changed, DELETE only what is wrong"
        )
    if problems:
        return checked
    plan.after = _rewrite(doc, operations, plan)
    _check_caps(checked, limits)
    return checked


def _rewrite(doc: MemoryDoc, operations: Sequence[Operation], plan: FilePlan) -> str:
    lines = list(doc.lines) if doc.existed and doc.lines else [NEW_FILE_TITLE, ""]
    facts = {item.number: normalise(item.text) for item in doc.items}
    removed: set[int] = set()
    for op in operations:
        item = doc.item(op.number)
        if op.kind == DELETE and item is not None:
            removed.add(item.line)
            facts.pop(op.number, None)
            plan.deleted += 1
    for op in operations:
        item = doc.item(op.number)
        if op.kind != UPDATE or item is None:
            continue
        new = normalise(op.text)
        if new == facts.get(op.number):
            plan.skipped.append(f"UPDATE {op.number}: the text is unchanged")
        elif new in {fact for number, fact in facts.items() if number != op.number}:
            plan.skipped.append(f"UPDATE {op.number}: it would duplicate another line")
        else:
            lines[item.line] = replace_fact(lines[item.line], op.text)
            facts[op.number] = new
            plan.updated += 1
    known = set(facts.values())
    additions: list[str] = []
    for op in operations:
        if op.kind != ADD:
            continue
        new = normalise(op.text)
        if new in known:
            plan.skipped.append(f"ADD {op.text!r}: already there")
            continue
        known.add(new)
        additions.append(f"- {op.text}")
        plan.added += 1
    kept = [line for index, line in enumerate(lines) if index not in removed]
    return _with_additions(kept, additions)


def _with_additions(lines: list[str], additions: list[str]) -> str:
    """New facts go at the end, or under ``## Learned`` in a file organised under ``##`` headings."""
    while lines and not lines[-1].strip():
        lines.pop()
    if additions:
        sections = [
            i for i, line in enumerate(lines) if HEADING.match(line) and line.lstrip().startswith("## ")
        ]
        if not sections:
            lines += ([""] if lines and HEADING.match(lines[-1]) else []) + additions
        else:
            learned = next((i for i in sections if lines[i].strip() == ADD_HEADING), None)
            if learned is None:
                lines += ["", ADD_HEADING, ""] + additions
            else:
                end = next((i for i in sections if i > learned), len(lines))
                while end > learned + 1 and not lines[end - 1].strip():
                    end -= 1
                lines[end:end] = additions
    return "\n".join(lines).rstrip() + "\n"


def _check_caps(checked: Checked, limits: Limits) -> None:
    plan = checked.plan
    before = plan.before or ""
    lines, size = count_lines(plan.after), len(plan.after.encode("utf-8"))
    old_lines, old_size = count_lines(before), len(before.encode("utf-8"))
    too_many = lines > limits.max_lines and lines > old_lines
    too_big = size > limits.max_bytes and size > old_size
    if too_many or too_big:
        checked.over_caps = True
        sizes = f"{lines:,} lines / {size:,} bytes (limits {limits.max_lines:,} lines, {limits.max_bytes:,} bytes)"
        checked.problems.append(
            f"{_where(plan.key)} would make the file {sizes}. Merge related facts (UPDATE one line, DELETE the "
            "lines it replaces), drop what is stale, and ADD only what is new and lasting"
        )
