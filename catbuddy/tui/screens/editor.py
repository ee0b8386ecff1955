"""/edit and /memory: an in-app Markdown editor for workspace files; $EDITOR on Ctrl+E.

The prompt builder rebuilds from disk on every call (fingerprint cache), so a save here is seen by the
next turn without a restart.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TabbedContent, TabPane, TextArea


@dataclass
class EditableFile:
    label: str
    path: Path
    initial: str  # what the editor opens with (the file, or the shipped default when it does not exist)


class FileSaver(Protocol):
    """How a save reaches the disk (slash.py passes one that versions the MEMORY.md files)."""

    def save(self, path: Path, text: str) -> None: ...

    def watch(self, path: Path) -> Callable[[], None]:
        """Before $EDITOR writes ``path``; the returned callable runs after it returned."""
        ...


class PlainSaver:
    def save(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def watch(self, path: Path) -> Callable[[], None]:
        return lambda: None


def markdown_language_available() -> bool:
    try:
        from textual._tree_sitter import get_language
    except ImportError:
        return False
    return get_language("markdown") is not None


def _editor_area(file: EditableFile, index: int) -> TextArea:
    language = "markdown" if markdown_language_available() else None
    area = TextArea.code_editor(
        file.initial, language=language, id=f"editor-{index}", soft_wrap=True, show_line_numbers=True
    )
    area.indent_type = "spaces"
    return area


class EditorScreen(ModalScreen[bool]):
    """Returns True when something was saved."""

    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    #editor-box {
        width: 95%;
        height: 90%;
    }
    #editor-box TextArea {
        height: 1fr;
    }
    #editor-box TabbedContent {
        height: 1fr;
    }
    #editor-box TabPane {
        height: 1fr;
        padding: 0;
    }
    #editor-status {
        height: 1;
    }
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("escape", "close", "Close", priority=True),
        Binding("ctrl+e", "external", "$EDITOR", priority=True),
    ]

    def __init__(self, files: list[EditableFile], title: str, saver: FileSaver | None = None) -> None:
        super().__init__(id="editor-screen")
        self.files = files
        self.saver = saver or PlainSaver()
        self.title_text = title
        self.saved_any = False
        self._confirm_discard = False

    def compose(self) -> ComposeResult:
        with Vertical(id="editor-box", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            if len(self.files) == 1:
                yield _editor_area(self.files[0], 0)
            else:
                with TabbedContent():
                    for index, file in enumerate(self.files):
                        with TabPane(file.label, id=f"tab-{index}"):
                            yield _editor_area(file, index)
            yield Static(self._help(), id="editor-status")

    def _help(self, message: str = "") -> Text:
        text = Text()
        if message:
            text.append(message + "   ", style="yellow")
        text.append("Ctrl+S save · Esc close · Ctrl+E open in $EDITOR", style="dim")
        return text

    def on_mount(self) -> None:
        self.query_one("#editor-0", TextArea).focus()

    def area(self, index: int) -> TextArea:
        return self.query_one(f"#editor-{index}", TextArea)

    def dirty(self) -> list[int]:
        return [
            i
            for i, file in enumerate(self.files)
            if self.area(i).text != file.initial or not file.path.exists()
        ]

    def _set_status(self, message: str) -> None:
        self.query_one("#editor-status", Static).update(self._help(message))

    def action_save(self) -> None:
        saved: list[str] = []
        for index in self.dirty():
            file = self.files[index]
            text = self.area(index).text
            try:
                self.saver.save(file.path, text)
            except OSError as exc:
                self._set_status(f"Could not save {file.path}: {exc.strerror or exc}")
                return
            file.initial = text
            saved.append(str(file.path))
        self.saved_any = self.saved_any or bool(saved)
        self._confirm_discard = False
        self._set_status("Saved " + ", ".join(saved) if saved else "Nothing to save")

    def action_close(self) -> None:
        changed = [i for i, file in enumerate(self.files) if self.area(i).text != file.initial]
        if changed and not self._confirm_discard:
            self._confirm_discard = True
            self._set_status("Unsaved changes: Ctrl+S saves, Esc again discards")
            return
        self.dismiss(self.saved_any)

    def _current_index(self) -> int:
        if len(self.files) == 1:
            return 0
        active = self.query_one(TabbedContent).active
        return int(active.removeprefix("tab-")) if active else 0

    def action_external(self) -> None:
        """Save, hand the file to $EDITOR (the app is suspended), then reload what it wrote."""
        index = self._current_index()
        file = self.files[index]
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self._set_status("Set $EDITOR (e.g. export EDITOR=vim) to edit outside the app")
            return
        try:
            self.saver.save(file.path, self.area(index).text)
            done = self.saver.watch(file.path)
        except OSError as exc:
            self._set_status(f"Could not save {file.path}: {exc.strerror or exc}")
            return
        try:
            with self.app.suspend():
                subprocess.run([*shlex.split(editor), str(file.path)], check=False)
        except Exception as exc:  # suspend is unsupported in some drivers (e.g. headless tests)
            self._set_status(f"Could not run $EDITOR: {exc}")
            return
        finally:
            done()
        text = file.path.read_text(encoding="utf-8")
        file.initial = text
        self.area(index).load_text(text)
        self.saved_any = True
        self._set_status(f"Reloaded {file.path} from $EDITOR")
