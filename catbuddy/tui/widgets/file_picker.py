"""The `@` file picker: typing `@` (at the start or after a space) lists the work root's files, narrowed
fuzzily as more is typed; Up/Down move, Tab or Enter put `@path ` in place of what was typed.

The file list is built once per app in a worker thread (git's list, or a walk honouring .gitignore:
mentions/files.py) and refreshed when it is older than REFRESH_AFTER seconds.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from catbuddy.mentions.fuzzy import FuzzyIndex

if TYPE_CHECKING:
    from catbuddy.mentions.files import FileIndex

REFRESH_AFTER = 30.0  # seconds: files created meanwhile show up on the next `@`
# What is being typed: `@` at the start of the line or after whitespace, then no space yet.
TYPING_MENTION = re.compile(r'(?:^|(?<=\s))@([^\s"]*)$')


def mention_being_typed(before_cursor: str) -> str | None:
    """The query of the mention the cursor is in (`@ap` -> "ap"), or None when there is none."""
    match = TYPING_MENTION.search(before_cursor)
    return match.group(1) if match else None


def mention_text(path: str) -> str:
    return f'@"{path}" ' if " " in path else f"@{path} "


class FilePicker(OptionList):
    DEFAULT_CSS = """
    #file-picker {
        height: auto;
        max-height: 14;
        border: round $accent;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="file-picker")
        self.display = False
        self.can_focus = False
        self.query_text: str | None = None  # what the list was made for
        self._index: FuzzyIndex | None = None
        self._built_at = 0.0
        self._loading = False
        self.source = ""  # "git" or "walk", once loaded

    def show_for(self, query: str, root: Path) -> None:
        self.query_text = query
        if self._index is None or time.monotonic() - self._built_at > REFRESH_AFTER:
            self._load(root)
        if self._index is None:
            return  # shown once the list is in
        self._fill(self._index.search(query))

    def _load(self, root: Path) -> None:
        if self._loading:
            return
        self._loading = True

        def build() -> None:
            from catbuddy.mentions.files import (
                list_files,
            )  # with the tools' ignore rules: not before the first frame

            index = list_files(root)
            self.app.call_from_thread(self._loaded, index)

        self.run_worker(build, thread=True, name="file-index", group="file-index", exclusive=True)

    def _loaded(self, index: FileIndex) -> None:
        self._loading = False
        self._index = FuzzyIndex(index.paths)
        self._built_at = time.monotonic()
        self.source = index.source
        if self.query_text is not None:
            self._fill(self._index.search(self.query_text))

    def _fill(self, paths: list[str]) -> None:
        self.clear_options()
        if not paths:
            self.display = False
            return
        for path in paths:
            self.add_option(Option(Text(path, style="bold" if path.endswith("/") else ""), id=path))
        self.highlighted = 0
        self.display = True

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()  # a click: the input puts the path in (prompt.PromptArea.accept_file)
        self.app.query_one("#prompt").accept_file(event.option.id)  # type: ignore[attr-defined]

    def hide(self) -> None:
        self.query_text = None
        self.display = False

    def selected_path(self) -> str | None:
        if self.highlighted is None or not self.option_count:
            return None
        return self.get_option_at_index(self.highlighted).id
