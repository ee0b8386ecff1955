"""Helpers for the memory tests (no tests here): a scripted model that answers Dream requests, and
ways to put entries and memory files on disk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from catbuddy.messages import content_text
from catbuddy.testing.script import Reply, ReplySpec

SECTIONS = ("## User Profile", "## Project Context")
WHOLE = 1_000_000  # stream a reply in one delta


def request_text(body: dict[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in body.get("messages") or [])


def is_dream_request(body: dict[str, Any]) -> bool:
    """What an outside checker looks for: no tools, and both section names asked for."""
    return not body.get("tools") and all(mark in request_text(body) for mark in SECTIONS)


def answer(user: list[str] | str = "NONE", project: list[str] | str = "NONE") -> str:
    """A Dream answer: each section a list of operation lines (without the leading "- ")."""

    def lines(ops: list[str] | str) -> str:
        ops = [ops] if isinstance(ops, str) else ops
        return "\n".join(f"- {op}" for op in ops)

    return f"## User Profile\n{lines(user)}\n\n## Project Context\n{lines(project)}\n"


class DreamBrain:
    """A responder for every request (push it many times). Dream requests take ``answers`` in order (a
    string, a ReplySpec, or a callable of the request body); chat requests get ``chat(body)``."""

    def __init__(
        self,
        answers: list[str | ReplySpec | Callable[[dict[str, Any]], str]] | None = None,
        chat: Callable[[dict[str, Any]], ReplySpec] | None = None,
    ) -> None:
        self.answers = list(answers or [])
        self.dream_bodies: list[dict[str, Any]] = []
        self.chat_bodies: list[dict[str, Any]] = []
        self.chat = chat or (lambda body: Reply.text("Noted.", chunk_size=WHOLE))

    def __call__(self, body: dict[str, Any]) -> ReplySpec:
        if not is_dream_request(body):
            self.chat_bodies.append(body)
            return self.chat(body)
        self.dream_bodies.append(body)
        item: Any = self.answers.pop(0) if self.answers else answer()
        if callable(item) and not isinstance(item, ReplySpec):
            item = item(body)
        return Reply.text(item, chunk_size=WHOLE) if isinstance(item, str) else item
