"""Shared helpers for the compaction tests (no tests here): a scripted "brain" that answers summary
requests with a summary and everything else with a chat reply, and ways to seed a history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from catbuddy.agent.loop import AgentLoop
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply, ReplySpec

COMPACT_MARK = "You are compacting the history"
WHOLE = 1_000_000  # stream a reply in one delta: many tiny writes make each request slow


def is_summary_request(body: Any) -> bool:
    """A chunked summary request (the instructions are its system prompt) or one on the live prefix
    (the chat's own request plus a last user message with the instructions)."""
    messages = body.get("messages") or []
    return bool(messages) and (
        COMPACT_MARK in content_text(messages[0].get("content"))
        or (messages[-1].get("role") == "user" and COMPACT_MARK in content_text(messages[-1].get("content")))
    )


def is_live_summary_request(body: Any) -> bool:
    messages = body.get("messages") or []
    return is_summary_request(body) and COMPACT_MARK not in content_text(messages[0].get("content"))


def summary_text(number: int) -> str:
    return f"## Goal\nsummary number {number}"


class Brain:
    """A responder for every request: push it many times (``[brain] * 500``).

    ``summaries`` are used in order for summary requests (a string or a ReplySpec each); after them,
    summaries are ``summary_text(n)``. ``reply`` answers the chat requests.
    """

    def __init__(
        self,
        summaries: list[str | ReplySpec] | None = None,
        reply: Callable[[dict[str, Any]], ReplySpec] | None = None,
    ) -> None:
        self.summaries = list(summaries or [])
        self.summary_requests = 0
        self.reply = reply or (lambda body: Reply.text("done", chunk_size=WHOLE))

    def __call__(self, body: dict[str, Any]) -> ReplySpec:
        if not is_summary_request(body):
            return self.reply(body)
        self.summary_requests += 1
        if self.summaries:
            item = self.summaries.pop(0)
            return Reply.text(item, chunk_size=WHOLE) if isinstance(item, str) else item
        return Reply.text(summary_text(self.summary_requests), chunk_size=WHOLE)


def summary_requests(llm: Any) -> list[Any]:
    return [r for r in llm.requests if is_summary_request(r.body)]


def chat_requests(llm: Any) -> list[Any]:
    return [r for r in llm.requests if not is_summary_request(r.body)]


def seed(loop: AgentLoop, turns: int, words: int = 5, tag: str = "q") -> None:
    """Append ``turns`` user/assistant pairs to the session, as finished turns would have."""
    filler = " ".join(["lorem"] * words)
    for i in range(turns):
        loop.conversation.append({"role": "user", "content": f"{tag}{i}: {filler}"})
        loop.conversation.append({"role": "assistant", "content": f"answer {tag}{i}: {filler}"})


def seed_tool_turn(loop: AgentLoop, tag: str, calls: int = 2) -> None:
    """One user message, an assistant message with ``calls`` tool calls, their results, a reply."""
    loop.conversation.append({"role": "user", "content": f"{tag}: list the files"})
    ids = [f"{tag}_c{i}" for i in range(calls)]
    loop.conversation.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
                for cid in ids
            ],
        }
    )
    for cid in ids:
        loop.conversation.append({"role": "tool", "tool_call_id": cid, "content": f"a.py b.py ({cid})"})
    loop.conversation.append({"role": "assistant", "content": f"{tag}: two files"})
