"""COMPACT: fold old history into an LLM-written rolling summary (docs/architecture.md §5).

This module decides *what* to fold and builds the summarizer's requests so each one fits the
window (folding in chunks when the history is too big for one call). The model call itself is
injected (``summarize``), so the agent loop owns the provider and the tests/bench can time
everything else.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catbuddy.context.tokens import TokenCounter
from catbuddy.messages import content_text
from catbuddy.resources import templates_dir
from catbuddy.session.history import HistoryEntry
from catbuddy.text import truncate_middle

COMPACT_TEMPLATE = "compact.md.j2"
# The summary's own reply budget: a quarter of the window, within these bounds.
SUMMARY_MIN_OUTPUT = 512
SUMMARY_MAX_OUTPUT = 4096
# Inside the summarizer's input, one message never takes more than this share of a chunk.
MAX_BLOCK_SHARE = 0.5
SHORTEN_WHY = " from this message of the summary input"
SHORTEN_MIN_CHARS = 100

Summarize = Callable[[list[dict[str, Any]], int], Awaitable[str]]


class CompactionFailed(Exception):
    """The summary could not be made or was not usable; the history stays as it was."""


@dataclass
class CompactionPlan:
    fold: list[HistoryEntry]
    keep: list[HistoryEntry]

    @property
    def folded_through(self) -> str:
        return self.fold[-1].id


@dataclass
class CompactionResult:
    summary: str
    chunks: int
    tokens_replaced: int  # previous summary + folded messages, as counted
    summary_tokens: int
    requests: list[list[dict[str, Any]]] = field(default_factory=list)


def plan_compaction(entries: Sequence[HistoryEntry], keep_recent: int) -> CompactionPlan | None:
    """Keep the newest ``keep_recent`` messages, moving the boundary back until the kept part starts
    on a user message (so no tool call is separated from its result). None if nothing can be folded."""
    if len(entries) <= keep_recent:
        start = 0
    else:
        start = len(entries) - keep_recent
    while start > 0 and entries[start].message.get("role") != "user":
        start -= 1
    if start <= 0:
        return None
    return CompactionPlan(fold=list(entries[:start]), keep=list(entries[start:]))


def summary_output_budget(context_window: int, max_output_tokens: int) -> int:
    return max(SUMMARY_MIN_OUTPUT, min(SUMMARY_MAX_OUTPUT, max_output_tokens, context_window // 4))


def render_message(message: Mapping[str, Any], tool_names: Mapping[str, str]) -> str:
    """One message of the transcript the summarizer reads."""
    role = str(message.get("role", "?"))
    text = content_text(message.get("content"))
    if role == "tool":
        name = tool_names.get(str(message.get("tool_call_id")), "tool")
        return f"TOOL RESULT ({name}):\n{text}"
    parts = [f"{role.upper()}:\n{text}" if text else f"{role.upper()}:"]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        parts.append(f"[calls {function.get('name')} {arguments}]")
    return "\n".join(parts)


def _shorten(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` cut in the middle until it counts at most ``max_tokens``."""
    if counter.count_text(text) <= max_tokens:
        return text
    keep_chars = max(200, max_tokens * 2)  # ~2 chars per token even for dense text
    while keep_chars > SHORTEN_MIN_CHARS:
        shortened = truncate_middle(text, keep_chars, why=SHORTEN_WHY)
        if counter.count_text(shortened) <= max_tokens:
            return shortened
        keep_chars = int(keep_chars * 0.7)
    return truncate_middle(text, SHORTEN_MIN_CHARS, why=SHORTEN_WHY)


class Compactor:
    def __init__(
        self,
        counter: TokenCounter,
        *,
        context_window: int,
        max_output_tokens: int,
        safety_margin: int,
        summarize: Summarize,
        calibration: float = 1.0,
    ) -> None:
        self.counter = counter
        self.context_window = context_window
        self.output_budget = summary_output_budget(context_window, max_output_tokens)
        self.safety_margin = safety_margin
        self.summarize = summarize
        # The provider may count more tokens than we do (docs/architecture.md §3): the summary request is held to
        # the same calibrated budget as every other request.
        self.calibration = max(1.0, calibration)
        self._template: Any = None

    def system_prompt(self, instructions: str | None, part: int = 1, parts: int = 1, target: int = 0) -> str:
        if self._template is None:
            import jinja2

            env = jinja2.Environment(
                loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True, lstrip_blocks=True
            )
            self._template = env.get_template(COMPACT_TEMPLATE)
        return str(
            self._template.render(
                instructions=(instructions or "").strip(),
                partial=parts > 1,
                part=part,
                parts=parts,
                target_tokens=target,
            )
        ).strip()

    def chunk_budget(self, instructions: str | None, previous_tokens: int = 0) -> int:
        """Tokens of transcript (our count) one summarizer request can carry, next to its prompt and
        the previous summary. Later chunks carry the summary of the earlier ones, which is at most the
        summary's output budget; the first carries the previous summary as it is, which can be longer
        (written under another model or config)."""
        fixed = self.counter.count_message(
            {"role": "system", "content": self.system_prompt(instructions, 1, 2, 9999)}
        )
        fixed += 3 + 4 + 16  # reply priming, the user message's frame, the section labels
        fixed += max(previous_tokens, self.output_budget)
        limit = self.context_window - self.output_budget - self.safety_margin
        return int(limit / self.calibration) - fixed

    def make_chunks(self, messages: Sequence[Mapping[str, Any]], budget: int) -> list[list[str]]:
        if budget <= 0:
            raise CompactionFailed(
                f"the {self.context_window}-token window leaves no room for a summary request; "
                "raise context_window for this model in config.toml"
            )
        tool_names = {
            str(call.get("id")): str((call.get("function") or {}).get("name"))
            for message in messages
            for call in message.get("tool_calls") or ()
        }
        max_block = max(64, int(budget * MAX_BLOCK_SHARE))
        chunks: list[list[str]] = [[]]
        used = 0
        for message in messages:
            block = _shorten(render_message(message, tool_names), max_block, self.counter)
            size = self.counter.count_text(block) + 2
            if chunks[-1] and used + size > budget:
                chunks.append([])
                used = 0
            chunks[-1].append(block)
            used += size
        return chunks

    def build_request(
        self,
        previous: str | None,
        blocks: Sequence[str],
        instructions: str | None,
        part: int,
        parts: int,
        target: int,
    ) -> list[dict[str, Any]]:
        previous_text = previous.strip() if previous else "(none: this is the first compaction)"
        body = (
            f"# Previous summary\n\n{previous_text}\n\n# Conversation to fold into the summary\n\n"
            + "\n\n".join(blocks)
        )
        return [
            {"role": "system", "content": self.system_prompt(instructions, part, parts, target)},
            {"role": "user", "content": body},
        ]

    async def compact(
        self,
        previous_summary: str | None,
        folded: Sequence[Mapping[str, Any]],
        instructions: str | None = None,
    ) -> CompactionResult:
        replaced = self.counter.count_messages(folded)
        if previous_summary:
            replaced += self.counter.count_text(previous_summary)
        target = max(SUMMARY_MIN_OUTPUT // 2, min(self.output_budget, replaced // 3))
        previous_tokens = self.counter.count_text(previous_summary) if previous_summary else 0
        chunks = self.make_chunks(folded, self.chunk_budget(instructions, previous_tokens))
        summary = previous_summary
        requests: list[list[dict[str, Any]]] = []
        for index, blocks in enumerate(chunks, start=1):
            request = self.build_request(summary, blocks, instructions, index, len(chunks), target)
            requests.append(request)
            try:
                reply = await self.summarize(request, self.output_budget)
            except CompactionFailed:
                raise
            except Exception as exc:  # provider errors become a failed compaction, never a dead session
                raise CompactionFailed(
                    f"the summary request failed: {getattr(exc, 'message', None) or exc}"
                ) from exc
            summary = (reply or "").strip()
            if not summary:
                raise CompactionFailed("the model returned an empty summary")
        assert summary is not None
        summary_tokens = self.counter.count_text(summary)
        if summary_tokens >= replaced:
            raise CompactionFailed(
                f"the summary ({summary_tokens:,} tokens) is not shorter than what it replaces ({replaced:,} tokens)"
            )
        return CompactionResult(summary, len(chunks), replaced, summary_tokens, requests)
