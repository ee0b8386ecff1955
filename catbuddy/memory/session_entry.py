"""The entry a finished session leaves for Dream: its user messages and final replies, bounded, no model
call. Tool calls and their results stay out (the session file keeps them); what the user said and what
the assistant concluded is what long-term memory is made of."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.redact import mask_secrets, redact_text
from catbuddy.session.history import SUMMARY_PREFIX
from catbuddy.text import fit_middle

MAX_MESSAGE_CHARS = 1_500  # one user message or reply in an entry
MAX_ENTRY_CHARS = 12_000  # one entry, all turns together (a compaction summary is held to it too)
_ID_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True)
class SessionDigest:
    content: str
    through: str  # id of the newest message it covers
    turns: int


def message_number(message_id: str) -> int:
    match = _ID_NUMBER.search(message_id)
    return int(match.group(1)) if match else -1


def digest_session(
    messages: Sequence[tuple[str, dict[str, Any]]], after: str | None, secrets: Sequence[str] = ()
) -> SessionDigest | None:
    """The turns among ``messages`` (id, OpenAI dict) newer than message ``after``; None when no user
    message is new. Each turn is the user's words and the last text reply before the next user message."""
    floor = message_number(after) if after else -1
    fresh = [(mid, msg) for mid, msg in messages if message_number(mid) > floor]
    turns: list[list[str]] = []  # [user words, final reply, last text said along with a tool call]
    for _, message in fresh:
        role = message.get("role")
        text = content_text(message.get("content")).strip()
        if role == "user" and text and not text.startswith(SUMMARY_PREFIX):
            turns.append([strip_runtime_block(text).strip(), "", ""])
        elif role == "assistant" and text and turns:
            turns[-1][2 if message.get("tool_calls") else 1] = text
    if not turns:
        return None
    blocks = []
    for user, final, interim in turns:
        reply = final or interim
        block = f"User: {fit_middle(user, MAX_MESSAGE_CHARS)}"
        if reply:
            block += f"\nAssistant: {fit_middle(reply, MAX_MESSAGE_CHARS)}"
        blocks.append(block)
    content = bound_entry("\n\n".join(blocks), secrets)
    return SessionDigest(content, fresh[-1][0], len(turns))


def bound_entry(text: str, secrets: Sequence[str] = ()) -> str:
    """Entry text as stored: keys, tokens and passwords masked (Dream never sees one), at most
    ``MAX_ENTRY_CHARS``."""
    return fit_middle(mask_secrets(redact_text(text.strip(), secrets), secrets), MAX_ENTRY_CHARS)
