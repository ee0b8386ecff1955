"""The baseline for bench_tui.py and its fresh-process driver: what any Textual app of this shape costs
(one Static, one TextArea)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.widgets import Static, TextArea


class BareApp(App[None]):
    def __init__(self, on_first_paint: Callable[[BareApp], None] | None = None) -> None:
        super().__init__()
        self._on_first_paint = on_first_paint

    def compose(self) -> ComposeResult:
        yield Static("hello")
        yield TextArea()

    def on_mount(self) -> None:
        if self._on_first_paint is not None:
            self.call_after_refresh(self._on_first_paint, self)
