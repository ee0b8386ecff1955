"""Memory dialogs: Dream's proposal for approval (``memory.dream = "ask"``) and a read-only view for
``/memory log`` and ``/memory diff``."""

from __future__ import annotations

import time

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from catbuddy.agent.events import DreamChoice, DreamProposed

ARM_DELAY = 0.5  # keys typed as the dialog opens do not answer it
CHOICE_KEYS = {
    "1": DreamChoice.APPLY,
    "y": DreamChoice.APPLY,
    "2": DreamChoice.DECLINE,
    "3": DreamChoice.LATER,
}

BOX_CSS = """
#dream-box, #memory-view-box {
    width: 90%;
    max-width: 120;
    height: auto;
    max-height: 90%;
    background: $surface;
    border: round $accent;
    padding: 0 1;
}
#dream-diff, #memory-view-body {
    height: auto;
    max-height: 30;
    border: round $panel-lighten-2;
}
#dream-choices {
    height: auto;
    margin: 1 0 0 0;
}
"""


def diff_renderable(text: str) -> Syntax | Text:
    if text.lstrip().startswith(("---", "@@", "+++", "#")) and "\n@@" in text:
        return Syntax(text, "diff", word_wrap=True)
    return Text(text)


class DreamScreen(ModalScreen[DreamChoice]):
    """Apply Dream's proposed diff, skip those entries, or decide later (Esc)."""

    DEFAULT_CSS = BOX_CSS
    BINDINGS = [Binding("escape", "later", "Not now", show=False)]

    def __init__(self, proposal: DreamProposed, arm_delay: float = ARM_DELAY) -> None:
        super().__init__(id="dream-screen")
        self.proposal = proposal
        self.arm_delay = arm_delay
        self._opened = time.monotonic()

    def compose(self) -> ComposeResult:
        proposal = self.proposal
        with Vertical(id="dream-box"):
            title = Text()
            title.append("Dream proposes memory ", style="bold")
            title.append(proposal.counts, style="bold yellow")
            title.append(f"  (from {proposal.entries} entries)", style="dim")
            yield Static(title, classes="dialog-title")
            with VerticalScroll(id="dream-diff"):
                yield Static(diff_renderable(proposal.diff))
            yield OptionList(
                Option("1  Apply", id=DreamChoice.APPLY.value),
                Option("2  Skip these entries (nothing is written)", id=DreamChoice.DECLINE.value),
                Option("3  Not now (ask again later)", id=DreamChoice.LATER.value),
                id="dream-choices",
            )

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        self.query_one(OptionList).focus()

    def armed(self) -> bool:
        return time.monotonic() - self._opened >= self.arm_delay

    def on_key(self, event: events.Key) -> None:
        if event.key in CHOICE_KEYS or (not self.armed() and event.key in ("enter", "space")):
            event.stop()
            event.prevent_default()
            if self.armed() and event.key in CHOICE_KEYS:
                self.dismiss(CHOICE_KEYS[event.key])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.armed():
            self.dismiss(DreamChoice(event.option.id or DreamChoice.LATER.value))

    def action_later(self) -> None:
        self.dismiss(DreamChoice.LATER)


class MemoryView(ModalScreen[None]):
    """``/memory log`` and ``/memory diff``: text to read, Esc closes."""

    type_through = True  # typing closes it; the keys go to the input (tui/type_through.py)
    DEFAULT_CSS = BOX_CSS
    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, title: str, body: str) -> None:
        super().__init__(id="memory-view")
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="memory-view-box"):
            yield Static(Text(f"{self.title_text}  (Esc closes)", style="bold"), classes="dialog-title")
            with VerticalScroll(id="memory-view-body"):
                yield Static(diff_renderable(self.body), id="memory-view-text")

    def action_close(self) -> None:
        self.dismiss(None)
