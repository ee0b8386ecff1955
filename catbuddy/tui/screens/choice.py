"""A small picker for `/approval` and `/model` typed without an argument."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class ChoicePicker(ModalScreen[str | None]):
    """Options as (value, description); Enter picks, Esc closes. The current value is marked."""

    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    #choice-list {
        height: auto;
        max-height: 30;
    }
    """

    type_through = True  # typing closes it; the keys go to the input (tui/type_through.py)
    BINDINGS = [Binding("escape", "cancel", "Close")]

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str | None) -> None:
        super().__init__(id="choice-picker")
        self.title_text = title
        self.choices = choices
        self.current = current

    def _label(self, value: str, description: str) -> Text:
        text = Text(
            f"{'●' if value == self.current else ' '} {value}", style="bold" if value == self.current else ""
        )
        if description:
            text.append(f"  {description}", style="dim")
        return text

    def compose(self) -> ComposeResult:
        with Vertical(id="choice-box", classes="dialog picker"):
            yield Static(
                Text(f"{self.title_text}  (Enter picks · Esc closes)", style="bold"), classes="dialog-title"
            )
            yield OptionList(*[Option(self._label(v, d), id=v) for v, d in self.choices], id="choice-list")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.focus()
        values = [value for value, _ in self.choices]
        if self.current in values:
            options.highlighted = values.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
