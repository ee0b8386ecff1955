"""The scrolling conversation: mounts only recent messages, prunes old ones, re-mounts them on demand.

Long sessions stay fast because the DOM never holds more than ``PRUNE_AT`` blocks; what was pruned
(or never mounted on resume) is rebuilt from ``loop.transcript()`` when the user asks for it: a click
on the control above the oldest mounted message, or scrolling up (wheel, Up, Page Up, Home) once the
view is at the top. Either way the transcript posts ``EarlierWanted`` and the app mounts the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static

from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock, UserBlock

if TYPE_CHECKING:
    from catbuddy.session.history import HistoryEntry

INITIAL_MESSAGES = 50  # mounted when a session opens
PAGE_MESSAGES = 50  # mounted per "load earlier"
PRUNE_AT = 150  # blocks mounted before old ones are dropped (layout cost grows with every block)
PRUNE_KEEP = 100  # blocks kept after a prune


def blocks_for(entries: Sequence[HistoryEntry], first_ordinal: int) -> list[Widget]:
    """Widgets for a slice of the transcript; `first_ordinal` counts user messages before the slice.
    A tool call shows how it ended from its stored meta, as it did live."""
    from catbuddy.tui.widgets.reply import AssistantBlock

    blocks: list[Widget] = []
    tools: dict[str, ToolBlock] = {}
    ordinal = first_ordinal
    for entry in entries:
        message = entry.message
        role = message.get("role")
        if role == "user":
            blocks.append(UserBlock(strip_runtime_block(content_text(message.get("content"))), ordinal))
            ordinal += 1
        elif role == "assistant":
            reasoning = message.get("reasoning_content") or message.get("reasoning")
            if isinstance(reasoning, str) and reasoning.strip():  # stored reasoning: folded, as it ended live
                from catbuddy.tui.widgets.thinking import ThinkingBlock

                blocks.append(ThinkingBlock(reasoning, collapsed=True))
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
            found.finish_stored(content_text(message.get("content")), entry.meta)
        elif role == "system":
            blocks.append(NoticeBlock(content_text(message.get("content")), "info"))
    return blocks


def _user_positions(entries: Sequence[HistoryEntry]) -> list[int]:
    return [index for index, entry in enumerate(entries) if entry.message.get("role") == "user"]


def _page_start(entries: Sequence[HistoryEntry], start: int) -> int:
    """Move a page start back so it never begins with tool results (they belong with their call)."""
    start = max(0, start)
    while start > 0 and entries[start].message.get("role") == "tool":
        start -= 1
    return start


class LoadEarlier(Static, can_focus=True):
    """The control above the oldest mounted message. A Static, not a Button: a Button's stylesheet
    is a large part of what the app's first frame would otherwise parse."""

    BINDINGS = [("enter", "press", "Load earlier")]

    def __init__(self) -> None:
        self._label = "▲ load earlier messages"
        super().__init__(Text(self._label), id="load-earlier", markup=False)

    @property
    def label(self) -> str:
        return self._label

    @label.setter
    def label(self, text: str) -> None:
        self._label = text
        self.update(Text(text))

    def on_click(self) -> None:
        self.action_press()

    def action_press(self) -> None:
        self.post_message(Transcript.EarlierWanted())


class Transcript(VerticalScroll):
    class EarlierWanted(Message):
        """The user asked for the messages before the oldest mounted one."""

        def __init__(self, keep_view: bool = False) -> None:
            super().__init__()
            self.keep_view = keep_view  # scrolled into: what was on screen stays there

    def __init__(self) -> None:
        super().__init__(id="transcript")
        self.load_button = LoadEarlier()
        self.load_button.display = False
        self._first_index: int | None = 0  # transcript index of the first mounted message
        self._first_ordinal = 0  # used when _first_index is unknown (after a prune)
        self.user_count = 0  # user messages in the session so far (ordinal for the next one)
        self.cap = PRUNE_AT  # raised while the user reads pages they loaded, reset when they send again

    def compose(self):  # type: ignore[no-untyped-def]
        yield self.load_button

    def on_mount(self) -> None:
        self.anchor()

    # Scrolling up at the top asks for the page before (the wheel's own handler runs after this one).
    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if not (event.ctrl or event.shift):
            self._scrolled_up()

    def action_scroll_up(self) -> None:
        self._scrolled_up()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._scrolled_up()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._scrolled_up()
        super().action_scroll_home()

    def _scrolled_up(self) -> None:
        if self.scroll_y <= 0 and self.has_earlier():
            self.post_message(self.EarlierWanted(keep_view=True))

    def follow(self) -> None:
        """Back to the live end: stick to the bottom, and prune as usual from now on."""
        self.cap = PRUNE_AT
        self.anchor()

    @property
    def blocks(self) -> list[Widget]:
        return [child for child in self.children if child is not self.load_button]

    async def reset(self, messages: Sequence[HistoryEntry], keep: Sequence[Widget] = ()) -> None:
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

    async def load_earlier(self, messages: Sequence[HistoryEntry], keep_view: bool = False) -> int:
        """Mount the page before the first mounted message; returns how many messages were added.
        ``keep_view``: scroll by what was added, so what the user was reading stays in view."""
        if not self.has_earlier():
            return 0
        height, top = self.virtual_size.height, self.scroll_y
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
        if keep_view and widgets:
            self.call_after_refresh(self._keep_view, height, top)
        return end - start

    def _keep_view(self, height: int, top: float) -> None:
        self.scroll_to(y=top + self.virtual_size.height - height, animate=False, immediate=True)
