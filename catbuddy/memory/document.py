"""A MEMORY.md as Dream sees it: its lines, with every line that holds a fact numbered.

Numbered are the non-blank lines that are not structure (headings, HTML comments, code fences); a
bullet is shown without its marker. So a file of bullets is numbered bullet by bullet, and a file edited
by hand into prose is still read, its lines numbered as they are. The numbers are what the model's
``UPDATE n`` and ``DELETE n`` refer to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catbuddy.workspace import is_default_memory

BULLET = re.compile(r"^(?P<indent>\s*)(?P<marker>[-*+]|\d+[.)])\s+(?P<text>.*\S)\s*$")
HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
FENCE = re.compile(r"^\s*(```|~~~)")
DATE_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}\s*[:–—-]\s*")
NEW_FILE_TITLE = "# Memory"
ADD_HEADING = "## Learned"  # where new facts go in a file organised under ## headings


@dataclass(frozen=True)
class Item:
    number: int  # 1-based, as shown to the model
    line: int  # index into ``MemoryDoc.lines``
    text: str  # the fact, without a bullet marker


@dataclass
class MemoryDoc:
    lines: list[str]
    items: list[Item]
    existed: bool  # the file was there (False: missing, or still the shipped template)

    @classmethod
    def parse(cls, text: str | None) -> MemoryDoc:
        if text is None or not text.strip() or is_default_memory(text):
            return cls([], [], text is not None)
        lines = text.splitlines()
        items: list[Item] = []
        in_comment = False
        for index, line in enumerate(lines):
            stripped = line.strip()
            if in_comment:
                in_comment = "-->" not in stripped
                continue
            if stripped.startswith("<!--"):
                in_comment = "-->" not in stripped
                continue
            if not stripped or HEADING.match(line) or FENCE.match(line):
                continue
            items.append(Item(len(items) + 1, index, fact_text(line)))
        return cls(lines, items, True)

    def item(self, number: int) -> Item | None:
        return self.items[number - 1] if 1 <= number <= len(self.items) else None

    def numbered(self) -> str:
        """The file as the model sees it: facts as ``[n] text``, structure lines as they are."""
        by_line = {item.line: item for item in self.items}
        shown = []
        for index, line in enumerate(self.lines):
            item = by_line.get(index)
            shown.append(f"[{item.number}] {item.text}" if item else line)
        return "\n".join(shown).strip()


def fact_text(line: str) -> str:
    match = BULLET.match(line)
    return match.group("text").strip() if match else line.strip()


def normalise(text: str) -> str:
    """What makes two facts the same: case, whitespace, a leading date and final punctuation ignored."""
    text = DATE_PREFIX.sub("", text.strip().lstrip("-*+ ").strip())
    return " ".join(text.casefold().split()).rstrip(".;!")


def replace_fact(line: str, text: str) -> str:
    """``line`` with its fact replaced by ``text``, its indent and bullet marker kept."""
    match = BULLET.match(line)
    if match:
        return f"{match.group('indent')}{match.group('marker')} {text}"
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}{text}"
