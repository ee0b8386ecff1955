"""The scrolling conversation: mounts only recent messages, prunes old ones, re-mounts them on demand.

Long sessions stay fast because the DOM never holds more than ``PRUNE_AT`` blocks; what was pruned
(or never mounted on resume) is rebuilt from ``loop.transcript()`` when the user asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Button

from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock, UserBlock

INITIAL_MESSAGES = 50  # mounted when a session opens
PAGE_MESSAGES = 50  # mounted per "load earlier"
PRUNE_AT = 150  # blocks mounted before old ones are dropped (layout cost grows with every block)
PRUNE_KEEP = 100  # blocks kept after a prune


def blocks_for(messages: list[dict[str, Any]], first_ordinal: int) -> list[Widget]:
    """Widgets for a slice of the transcript; `first_ordinal` counts user messages before the slice."""
    from catbuddy.tui.widgets.reply import AssistantBlock

    blocks: list[Widget] = []
    tools: dict[str, ToolBlock] = {}
    ordinal = first_ordinal
    for message in messages:
        role = message.get("role")
        if role == "user":
            blocks.append(UserBlock(strip_runtime_block(content_text(message.get("content"))), ordinal))
            ordinal += 1
        elif role == "assistant":
            text = content_text(message.get("content"))
            if text.strip():
                blocks.append(AssistantBlock(text))
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                block = ToolBlock(
                    call.get("id", ""), function.get("name", "tool"), function.get("arguments", "")
                )
                tools[block.call_id] = block
                blocks.append(block)
        elif role == "tool":
            found = tools.get(message.get("tool_call_id", ""))
            if found is None:  # its call lies before the slice
                found = ToolBlock(message.get("tool_call_id", ""), message.get("name") or "tool", "")
                blocks.append(found)
            found.finish(content_text(message.get("content")), False, 0.0)
        elif role == "system":
            blocks.append(NoticeBlock(content_text(message.get("content")), "info"))
    return blocks


def _user_positions(messages: list[dict[str, Any]]) -> list[int]:
    return [index for index, message in enumerate(messages) if message.get("role") == "user"]


def _page_start(messages: list[dict[str, Any]], start: int) -> int:
    """Move a page start back so it never begins with tool results (they belong with their call)."""
    start = max(0, start)
    while start > 0 and messages[start].get("role") == "tool":
        start -= 1
    return start


class Transcript(VerticalScroll):
    def __init__(self) -> None:
        super().__init__(id="transcript")
        self.load_button = Button("▲ load earlier messages", id="load-earlier", compact=True)
        self.load_button.display = False
        self._first_index: int | None = 0  # transcript index of the first mounted message
        self._first_ordinal = 0  # used when _first_index is unknown (after a prune)
        self.user_count = 0  # user messages in the session so far (ordinal for the next one)
        self.cap = PRUNE_AT  # raised while the user reads pages they loaded, reset when they send again

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.load_button

    def on_mount(self) -> None:
        self.anchor()

    def follow(self) -> None:
        """Back to the live end: stick to the bottom, and prune as usual from now on."""
        self.cap = PRUNE_AT
        self.anchor()

    @property
    def blocks(self) -> list[Widget]:
        return [child for child in self.children if child is not self.load_button]

    async def reset(self, messages: list[dict[str, Any]], keep: Sequence[Widget] = ()) -> None:
        """Show a session: the newest messages only, with a control for the rest; ``keep``: blocks
        that stay, after the session's."""
        kept = [block for block in keep if block.parent is self]
        await self.remove_children([block for block in self.blocks if block not in kept])
        self.cap = PRUNE_AT
        start = _page_start(messages, len(messages) - INITIAL_MESSAGES)
        first_ordinal = len(_user_positions(messages[:start]))
        self.user_count = len(_user_positions(messages))
        self._first_index = start
        self._first_ordinal = first_ordinal
        self._update_button()
        widgets = blocks_for(messages[start:], first_ordinal)
        if widgets:
            await self.mount_all(widgets, before=kept[0] if kept else None)
        self.anchor()

    async def add(self, widget: Widget) -> None:
        await self.mount(widget)
        if len(self.children) > self.cap:
            await self._prune()

    async def _prune(self) -> None:
        blocks = self.blocks
        cut = len(blocks) - PRUNE_KEEP
        # Cut at a user message so what remains maps onto the transcript by user ordinal.
        for index in range(cut, len(blocks)):
            block = blocks[index]
            if isinstance(block, UserBlock) and block.user_ordinal is not None:
                await self.remove_children(blocks[:index])
                self._first_index = None
                self._first_ordinal = block.user_ordinal
                self._update_button()
                return

    def has_earlier(self) -> bool:
        return self._first_index is None or self._first_index > 0

    def _update_button(self) -> None:
        self.load_button.display = self.has_earlier()
        if self._first_index:
            self.load_button.label = f"▲ load earlier messages ({self._first_index} more)"
        else:
            self.load_button.label = "▲ load earlier messages"

    async def load_earlier(self, messages: list[dict[str, Any]]) -> int:
        """Mount the page before the first mounted message; returns how many messages were added."""
        end = self._first_index
        if end is None:
            positions = _user_positions(messages)
            end = positions[self._first_ordinal] if self._first_ordinal < len(positions) else len(messages)
        start = _page_start(messages, end - PAGE_MESSAGES)
        widgets = blocks_for(messages[start:end], len(_user_positions(messages[:start])))
        if widgets:
            await self.mount_all(widgets, after=self.load_button)
        self._first_index = start
        self._update_button()
        self.cap = max(PRUNE_AT, len(self.blocks) + PRUNE_AT - PRUNE_KEEP)  # keep what was asked for
        return end - start
