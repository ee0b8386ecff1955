"""The model's reasoning ("thinking") as it streams: a dim block that collapses to one line when the
answer starts, and opens again on a click (or Enter when focused)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from catbuddy.tui.widgets.block import TranscriptBlock

PREVIEW_CHARS = 80  # of the reasoning, shown on the collapsed line


class ThinkingBlock(Vertical, TranscriptBlock, can_focus=True):
    DEFAULT_CSS = """
    ThinkingBlock { height: auto; margin: 0 0 1 0; color: $text-muted; }
    ThinkingBlock > .thinking-title { text-style: italic; }
    ThinkingBlock > .thinking-body { text-style: dim; padding: 0 0 0 2; }
    ThinkingBlock.-collapsed > .thinking-body { display: none; }
    """
    BINDINGS = [("enter", "toggle_reasoning", "Show or hide the reasoning")]
    typed_to_input = True  # tui/type_through.py: text typed while it has focus goes to the input

    def __init__(self, text: str = "", *, collapsed: bool = False) -> None:
        super().__init__(classes="thinking-block")
        self.text = text
        self.streaming = not collapsed
        self._title = Static("", classes="thinking-title")
        self._body = Static(text, classes="thinking-body", markup=False)
        self.set_class(collapsed, "-collapsed")

    def compose(self) -> ComposeResult:
        yield self._title
        yield self._body

    def on_mount(self) -> None:
        self._show_title()

    @property
    def collapsed(self) -> bool:
        return self.has_class("-collapsed")

    def write(self, fragment: str) -> None:
        self.text += fragment
        self._body.update(self.text)
        self._show_title()

    def finish(self) -> None:
        """The answer (or a tool call) started: fold the reasoning away."""
        self.streaming = False
        self.add_class("-collapsed")
        self._show_title()

    def action_toggle_reasoning(self) -> None:
        self.toggle_class("-collapsed")
        self._show_title()

    def on_click(self) -> None:
        self.action_toggle_reasoning()

    def _show_title(self) -> None:
        if self.streaming:
            title = "▾ thinking…"
        elif self.collapsed:
            preview = " ".join(self.text.split())[:PREVIEW_CHARS]
            title = f"▸ thought ({len(self.text):,} chars): {preview}…"
        else:
            title = "▾ thought"
        self._title.update(title)
