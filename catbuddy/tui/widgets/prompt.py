"""The input: multi-line, history on Up/Down, slash-command completion, and the queue shown above it."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from catbuddy.tui.widgets import slash_table
from catbuddy.tui.widgets.file_picker import FilePicker, mention_being_typed, mention_text

HISTORY_LIMIT = 500
QUEUE_PREVIEW_CHARS = 100


class PromptArea(TextArea):
    """Enter sends; Shift+Enter (where the terminal reports it) and Ctrl+J insert a newline."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self) -> None:
        super().__init__(
            id="prompt",
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Ask catbuddy…  (/ commands · Shift+Enter or Ctrl+J newline · Esc stops)",
        )
        self.input_history: list[str] = []
        self._history_pos: int | None = None
        self._draft = ""

    @property
    def completer(self) -> Completer:
        return self.app.query_one(Completer)

    @property
    def file_picker(self) -> FilePicker:
        return self.app.query_one(FilePicker)

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        completer = self.completer
        if self.file_picker.display and key in ("up", "down", "tab", "enter"):
            self._stop(event)
            self._file_picker_key(key)
            return
        if key in ("up", "down", "tab", "enter"):
            # Keys typed in a burst are handled before the Changed messages they caused: bring the
            # list up to date with the text as it is now, not as it was a few keys ago.
            self.sync_completer()
        if key == "enter" and slash_table.is_full_command(self.text):
            self._stop(event)
            self.submit()  # the command is typed in full: run it, even if it takes an argument
            return
        if completer.display and key in ("up", "down", "tab", "enter"):
            self._stop(event)
            if key == "up":
                completer.action_cursor_up()
            elif key == "down":
                completer.action_cursor_down()
            else:
                self._accept_completion(run=key == "enter")
            return
        if key == "enter":
            self._stop(event)
            self.submit()
            return
        if key in ("shift+enter", "ctrl+j", "alt+enter"):
            self._stop(event)
            self.insert("\n")
            return
        if key == "up" and self.cursor_location[0] == 0 and self.input_history:
            self._stop(event)
            self.history_back()
            return
        if (
            key == "down"
            and self._history_pos is not None
            and self.cursor_location[0] == self.document.line_count - 1
        ):
            self._stop(event)
            self.history_forward()
            return
        await super()._on_key(event)

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        if not self.input_history or self.input_history[-1] != text:
            self.input_history.append(text)
            del self.input_history[:-HISTORY_LIMIT]
        self._history_pos = None
        self.clear()
        self.completer.hide()
        self.file_picker.hide()
        self.post_message(self.Submitted(text))

    def history_back(self) -> None:
        if self._history_pos is None:
            self._draft = self.text
            self._history_pos = len(self.input_history)
        if self._history_pos > 0:
            self._history_pos -= 1
            self._show(self.input_history[self._history_pos])

    def history_forward(self) -> None:
        if self._history_pos is None:
            return
        self._history_pos += 1
        if self._history_pos >= len(self.input_history):
            self._history_pos = None
            self._show(self._draft)
        else:
            self._show(self.input_history[self._history_pos])

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    def _accept_completion(self, run: bool) -> None:
        name = self.completer.selected_name()
        self.completer.hide()
        if name is None:
            return
        command = slash_table.lookup(name)
        if command is None:
            return
        if run and not command.usage:
            self.load_text(f"/{name}")
            self.submit()
            return
        self._show(f"/{name} ")

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.sync_completer()
        self.sync_file_picker()

    def sync_file_picker(self) -> None:
        """`@` being typed: the picker narrows to it; anything else hides it."""
        row, column = self.cursor_location
        query = mention_being_typed(self.document.get_line(row)[:column])
        picker = self.file_picker
        if query is None:
            picker.hide()
        elif picker.query_text != query or not picker.display:
            picker.show_for(query, self.app.workspace.work_root)  # type: ignore[attr-defined]

    def _file_picker_key(self, key: str) -> None:
        picker = self.file_picker
        if key == "up":
            picker.action_cursor_up()
        elif key == "down":
            picker.action_cursor_down()
        else:
            self.accept_file(picker.selected_path())

    def accept_file(self, path: str | None) -> None:
        """Put `@path ` where the mention being typed is."""
        picker = self.file_picker
        picker.hide()
        row, column = self.cursor_location
        query = mention_being_typed(self.document.get_line(row)[:column])
        if path is None or query is None:
            return
        self.replace(mention_text(path), (row, column - len(query) - 1), (row, column))
        picker.hide()

    def sync_completer(self) -> None:
        """Show the commands matching the text now (a slash word with no space yet), else hide."""
        text = self.text
        if text.startswith("/") and " " not in text and "\n" not in text:
            if not (self.completer.display and self.completer.typed == text):
                self.completer.show_for(text)
        else:
            self.completer.hide()


class Completer(OptionList):
    """Slash commands matching what was typed, each with its description."""

    def __init__(self) -> None:
        super().__init__(id="completer")
        self.display = False
        self.can_focus = False
        self.typed = ""  # the text the list was made for

    def show_for(self, typed: str) -> None:
        self.typed = typed
        matches = slash_table.complete(typed)
        if not matches or (
            len(matches) == 1 and f"/{matches[0].name}" == typed.strip() and not matches[0].usage
        ):
            self.hide()
            return
        self.clear_options()
        width = max(len(command.name) for command in matches) + 1
        for command in matches:
            # Two columns: a description that wraps stays in its column (a hanging indent), at 80 too.
            row = Table.grid(padding=(0, 2))
            row.add_column(width=width, no_wrap=True)
            row.add_column(ratio=1)
            about = Text(command.description)
            if command.usage:
                about.append(f"  {command.usage}", style="dim")
            row.add_row(Text(f"/{command.name}", style="bold"), about)
            self.add_option(Option(row, id=command.name))
        self.highlighted = 0
        self.display = True

    def hide(self) -> None:
        self.display = False

    def selected_name(self) -> str | None:
        if self.highlighted is None or not self.option_count:
            return None
        return self.get_option_at_index(self.highlighted).id


class QueuedView(Static):
    """Inputs typed while a turn runs, waiting their turn."""

    def __init__(self) -> None:
        super().__init__(id="queued")
        self.display = False

    def show(self, queued: list[str]) -> None:
        self.display = bool(queued)
        text = Text()
        for index, item in enumerate(queued):
            line = " ".join(item.split())
            if len(line) > QUEUE_PREVIEW_CHARS:
                line = line[: QUEUE_PREVIEW_CHARS - 1] + "…"
            if index:
                text.append("\n")
            text.append("⏳ queued: ", style="yellow")
            text.append(line, style="dim")
        self.update(text)


class PromptBox(Vertical):
    def __init__(self) -> None:
        super().__init__(id="prompt-box")

    def compose(self):  # type: ignore[no-untyped-def]
        yield QueuedView()
        yield Completer()
        yield FilePicker()
        yield PromptArea()
