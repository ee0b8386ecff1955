"""COMPACT: fold old history into an LLM-written rolling summary (docs/architecture.md §5).

This module decides *what* to fold and builds the summarizer's requests so each one fits the
window. Two ways: on the live prefix (the request as it would be sent now, plus one user message
with the instructions, ``tool_choice: "none"``), which the provider serves from its prompt cache,
when the whole history fits and the compact model is the chat model; otherwise in chunks, each a
request of its own with the summary so far. The model call itself is injected (``summarize``), so
the agent loop owns the provider and the tests/bench can time everything else.

The model writes only prose (goal, rules, decisions, state, open questions, next step); the ledger
(``context/compaction/ledger.py``) and the user's words (``context/compaction/user_words.py``) are code's, and are joined
to the prose by ``pinned_summary``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from catbuddy.context.compaction.prompts import render
from catbuddy.context.compaction.user_words import UserWords
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.errors import CatbuddyError
from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.session.history import HistoryEntry
from catbuddy.text import cut_line, truncate_middle

COMPACT_TEMPLATE = "compact.md.j2"
PINNED_TEMPLATE = "compact_pinned.md.j2"
LIVE = "live_prefix"
CHUNKED = "chunked"
KEPT_START_CHARS = 80
# The summary's own reply budget: a quarter of the window, within these bounds.
SUMMARY_MIN_OUTPUT = 512
SUMMARY_MAX_OUTPUT = 4096
# Inside the summarizer's input, one message never takes more than this share of a chunk.
MAX_BLOCK_SHARE = 0.5
SHORTEN_WHY = " from this message of the summary input"
SHORTEN_MIN_CHARS = 100

# ``summarize(messages, max_tokens)``; on the live prefix also ``tools=…, tool_choice="none"``.
Summarize = Callable[..., Awaitable[str]]


class CompactionFailed(CatbuddyError):
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
    summary: str  # the model's prose (the pinned summary adds the user's words and the ledger)
    chunks: int
    tokens_replaced: int  # previous summary + folded messages, as counted
    summary_tokens: int
    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    mode: str = CHUNKED


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


def _calls_of(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


def summary_output_budget(context_window: int, max_output_tokens: int) -> int:
    return max(SUMMARY_MIN_OUTPUT, min(SUMMARY_MAX_OUTPUT, max_output_tokens, context_window // 4))


def render_message(message: Mapping[str, Any], tool_names: Mapping[str, str]) -> str:
    """One message of the transcript the summarizer reads."""
    role = str(message.get("role", "?"))
    text = content_text(message.get("content"))
    if role == "user":
        text = strip_runtime_block(text)
    if role == "tool":
        name = tool_names.get(str(message.get("tool_call_id")), "tool")
        return f"TOOL RESULT ({name}):\n{text}"
    parts = [f"{role.upper()}:\n{text}" if text else f"{role.upper()}:"]
    for call in _calls_of(message):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            parts.append(f"[a malformed tool call: {json.dumps(call, ensure_ascii=False, default=str)}]")
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
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

    def system_prompt(
        self,
        instructions: str | None,
        part: int = 1,
        parts: int = 1,
        target: int = 0,
        *,
        live: bool = False,
        ledger: str = "",
        kept: int = 0,
        kept_start: str = "",
    ) -> str:
        """The instructions: the system prompt of a chunk request, or the last user message of a live one."""
        return render(
            COMPACT_TEMPLATE,
            instructions=(instructions or "").strip(),
            partial=parts > 1,
            part=part,
            parts=parts,
            target_tokens=target,
            live=live,
            ledger=ledger,
            kept=kept,
            kept_start=kept_start,
        )

    def target_tokens(self, replaced: int) -> int:
        return max(SUMMARY_MIN_OUTPUT // 2, min(self.output_budget, replaced // 3))

    # --- on the live prefix -------------------------------------------------------------------------

    def live_request(
        self,
        prefix: Sequence[Mapping[str, Any]],
        instructions: str | None,
        *,
        ledger: str,
        kept: Sequence[Mapping[str, Any]],
        target: int,
    ) -> list[dict[str, Any]]:
        """The request as it would be sent now, then one user message asking for the summary."""
        start = next((m for m in kept if m.get("role") == "user"), None)
        kept_start = ""
        if start is not None:
            kept_start = cut_line(" ".join(strip_runtime_block(content_text(start.get("content"))).split()), KEPT_START_CHARS)
        ask = self.system_prompt(
            instructions, target=target, live=True, ledger=ledger, kept=len(kept), kept_start=kept_start
        )
        return [*(dict(m) for m in prefix), {"role": "user", "content": ask}]

    def live_fits(self, prefix_tokens: int, request: Sequence[Mapping[str, Any]]) -> bool:
        """Whether the live request (``prefix_tokens``: the governed request, calibrated) and the summary's
        reply fit this model's window."""
        ask = self.counter.count_message(request[-1])
        return prefix_tokens + int(ask * self.calibration) + self.output_budget + self.safety_margin <= self.context_window

    async def compact_live(
        self,
        request: list[dict[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        replaced: int,
    ) -> CompactionResult:
        """One summary request on the live prefix (``live_request``), with the chat's tool schemas and
        ``tool_choice: "none"``, so the provider serves the prefix from its cache."""
        options: dict[str, Any] = {"tool_choice": "none"}
        if tools:
            options["tools"] = list(tools)
        summary = await self._ask(request, **options)
        return self._result(summary, 1, replaced, [request], LIVE)

    # --- in chunks ------------------------------------------------------------------------------------

    def chunk_budget(self, instructions: str | None, previous_tokens: int = 0, ledger: str = "") -> int:
        """Tokens of transcript (our count) one summarizer request can carry, next to its prompt, the
        ledger and the previous summary. Later chunks carry the summary of the earlier ones, which is at
        most the summary's output budget; the first carries the previous summary as it is, which can be
        longer (written under another model or config)."""
        fixed = self.counter.count_message(
            {"role": "system", "content": self.system_prompt(instructions, 1, 2, 9999, ledger="(ledger)")}
        )
        fixed += 3 + 4 + 24  # reply priming, the user message's frame, the section labels
        fixed += max(previous_tokens, self.output_budget)
        if ledger:
            fixed += self.counter.count_text(ledger)
        limit = self.context_window - self.output_budget - self.safety_margin
        return int(limit / self.calibration) - fixed

    def _blocks(self, messages: Sequence[Mapping[str, Any]], budget: int) -> Iterator[tuple[str, int]]:
        """Each message rendered for the summarizer (shortened to its share of a chunk), with its size."""
        if budget <= 0:
            raise CompactionFailed(
                f"the {self.context_window}-token window leaves no room for a summary request; "
                "raise context_window for this model in config.toml"
            )
        tool_names = {
            str(call.get("id")): str(call["function"].get("name"))
            for message in messages
            for call in _calls_of(message)
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping)
        }
        max_block = max(64, int(budget * MAX_BLOCK_SHARE))
        for message in messages:
            block = _shorten(render_message(message, tool_names), max_block, self.counter)
            yield block, self.counter.count_text(block) + 2

    def make_chunks(self, messages: Sequence[Mapping[str, Any]], budget: int) -> list[list[str]]:
        chunks: list[list[str]] = [[]]
        used = 0
        for block, size in self._blocks(messages, budget):
            if chunks[-1] and used + size > budget:
                chunks.append([])
                used = 0
            chunks[-1].append(block)
            used += size
        return chunks

    def first_chunk_size(self, messages: Sequence[Mapping[str, Any]], budget: int) -> int:
        """How many of ``messages`` one summarizer request can carry (at least one). Stops counting at
        the first that does not fit, so a huge history costs no more than one chunk's worth."""
        used = 0
        for index, (_, size) in enumerate(self._blocks(messages, budget)):
            if index and used + size > budget:
                return index
            used += size
        return len(messages)

    def build_request(
        self,
        previous: str | None,
        blocks: Sequence[str],
        instructions: str | None,
        part: int,
        parts: int,
        target: int,
        ledger: str = "",
    ) -> list[dict[str, Any]]:
        previous_text = previous.strip() if previous else "(none: this is the first compaction)"
        ledger_part = f"# {ledger.lstrip('# ')}\n\n" if ledger else ""
        body = (
            f"{ledger_part}# Previous summary\n\n{previous_text}\n\n# Conversation to fold into the summary\n\n"
            + "\n\n".join(blocks)
        )
        return [
            {"role": "system", "content": self.system_prompt(instructions, part, parts, target, ledger=ledger)},
            {"role": "user", "content": body},
        ]

    def replaced_tokens(self, previous_summary: str | None, folded: Sequence[Mapping[str, Any]]) -> int:
        replaced = self.counter.count_messages(folded)
        if previous_summary:
            replaced += self.counter.count_text(previous_summary)
        return replaced

    async def compact(
        self,
        previous_summary: str | None,
        folded: Sequence[Mapping[str, Any]],
        instructions: str | None = None,
        *,
        ledger: str = "",
        replaced: int | None = None,
        target: int | None = None,
    ) -> CompactionResult:
        """Fold ``folded`` into ``previous_summary`` (the model's prose of the last compaction) in chunks."""
        if replaced is None:
            replaced = self.replaced_tokens(previous_summary, folded)
        if target is None:
            target = self.target_tokens(replaced)
        previous_tokens = self.counter.count_text(previous_summary) if previous_summary else 0
        chunks = self.make_chunks(folded, self.chunk_budget(instructions, previous_tokens, ledger))
        summary = previous_summary
        requests: list[list[dict[str, Any]]] = []
        for index, blocks in enumerate(chunks, start=1):
            request = self.build_request(summary, blocks, instructions, index, len(chunks), target, ledger)
            requests.append(request)
            summary = await self._ask(request)
        assert summary is not None
        return self._result(summary, len(chunks), replaced, requests, CHUNKED)

    # --- shared ---------------------------------------------------------------------------------------

    async def _ask(self, request: list[dict[str, Any]], **options: Any) -> str:
        try:
            reply = await self.summarize(request, self.output_budget, **options)
        except CompactionFailed:
            raise
        except Exception as exc:  # provider errors become a failed compaction, never a dead session
            raise CompactionFailed(f"the summary request failed: {getattr(exc, 'message', None) or exc}") from exc
        summary = (reply or "").strip()
        if not summary:
            raise CompactionFailed("the model returned an empty summary")
        return summary

    def _result(
        self, summary: str, chunks: int, replaced: int, requests: list[list[dict[str, Any]]], mode: str
    ) -> CompactionResult:
        summary_tokens = self.counter.count_text(summary)
        if summary_tokens >= replaced:
            raise CompactionFailed(
                f"the summary ({summary_tokens:,} tokens) is not shorter than what it replaces ({replaced:,} tokens)"
            )
        return CompactionResult(summary, chunks, replaced, summary_tokens, requests, mode)


def pinned_summary(prose: str, words: Sequence[UserWords], left_out: int, ledger: str, folded: int) -> str:
    """The pinned summary: the model's prose, the user's own words, the ledger, and the recall note."""
    return render(PINNED_TEMPLATE, prose=prose.strip(), words=list(words), left_out=left_out, ledger=ledger, folded=folded)
