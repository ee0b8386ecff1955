"""The Dream request: ``templates/dream.md.j2`` rendered with both memory files numbered, USER.md and
SOUL.md for context, and the pending entries that fit the token budget (oldest first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from catbuddy.memory.document import MemoryDoc
from catbuddy.memory.journal import MemoryEntry
from catbuddy.memory.paths import GLOBAL, PROJECT
from catbuddy.resources import templates_dir
from catbuddy.text import fit_middle

DREAM_TEMPLATE = "dream.md.j2"
CONTEXT_FILE_CHARS = 4_000  # USER.md / SOUL.md shown to Dream at most
CHARS_PER_TOKEN = 3  # to cut one oversized entry to the budget before counting it exactly

Message = dict[str, Any]


@dataclass(frozen=True)
class DreamMaterial:
    texts: dict[str, str | None]  # "global" / "project": each file as read (None: missing)
    docs: dict[str, MemoryDoc]  # the same, numbered
    user_md: str
    soul_md: str
    entries: list[MemoryEntry]  # what this run reads
    waiting: int  # pending entries left for a later run


@lru_cache(maxsize=1)
def _template() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template(DREAM_TEMPLATE).module


def system_message(max_lines: int, max_bytes: int) -> Message:
    return {"role": "system", "content": str(_template().system(max_lines, max_bytes)).strip()}


def request_message(material: DreamMaterial) -> Message:
    def view(doc: MemoryDoc) -> dict[str, Any]:
        return {"text": doc.numbered(), "count": len(doc.items)}

    text = _template().request(
        view(material.docs[GLOBAL]),
        view(material.docs[PROJECT]),
        material.user_md,
        material.soul_md,
        material.entries,
        material.waiting,
    )
    return {"role": "user", "content": str(text).strip()}


def retry_messages(messages: Sequence[Message], rejected: str, reason: str) -> list[Message]:
    """The first request, the rejected answer, and why it was rejected: the one retry."""
    return [
        *messages,
        {"role": "assistant", "content": rejected},
        {"role": "user", "content": str(_template().retry(reason)).strip()},
    ]


def context_file(text: str | None, shipped: str) -> str:
    """USER.md / SOUL.md as Dream sees them: nothing while still the shipped template, else bounded."""
    if not text or not text.strip() or text.strip() == shipped.strip():
        return ""
    return fit_middle(text.strip(), CONTEXT_FILE_CHARS)


def select_entries(
    entries: Sequence[MemoryEntry], budget: int, count_text: Callable[[str], int]
) -> tuple[list[MemoryEntry], int]:
    """The oldest entries whose text fits ``budget`` tokens, and how many are left. The first entry is
    always taken (cut to the budget if it alone is too big), so every run makes progress."""
    chosen: list[MemoryEntry] = []
    used = 0
    for entry in entries:
        size = count_text(entry.content) + 24  # its heading line
        if chosen and used + size > budget:
            break
        if not chosen and size > budget:
            cut = fit_middle(
                entry.content, max(200, budget * CHARS_PER_TOKEN), why=" to fit the Dream budget"
            )
            entry = MemoryEntry(entry.cursor, entry.at, entry.session_id, entry.kind, cut, entry.extra)
            size = count_text(cut) + 24
        chosen.append(entry)
        used += size
    return chosen, len(entries) - len(chosen)
