"""The approval dialog for exec and file writes.

Keys are ignored for ``ARM_DELAY`` seconds after it opens, so a user typing when it pops up does not
approve something by accident.
"""

from __future__ import annotations

import time

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from catbuddy.agent.events import ApprovalChoice, ApprovalDecision, ApprovalRequested

ARM_DELAY = 0.5
CHOICE_KEYS = {"1": 0, "y": 0, "2": 1, "a": 1, "3": 2, "n": 2, "4": 3, "d": 3}


def preview_renderable(request: ApprovalRequested) -> Syntax | Text:
    preview = request.preview or request.summary
    if request.name == "exec":
        return Syntax(preview, "bash", word_wrap=True)
    if preview.lstrip().startswith(("---", "@@", "diff ", "+++")):
        return Syntax(preview, "diff", word_wrap=True)
    return Text(preview)


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    BINDINGS = [Binding("escape", "deny", "Deny", show=False)]

    def __init__(self, request: ApprovalRequested, arm_delay: float = ARM_DELAY) -> None:
        super().__init__(id="approval")
        self.request = request
        self.arm_delay = arm_delay
        self._opened = time.monotonic()

    @property
    def pattern(self) -> str:
        return self.request.suggested_pattern

    def compose(self) -> ComposeResult:
        request = self.request
        session_label = "Allow for this session"
        if self.pattern:
            session_label += f"  (any `{self.pattern}`)"
        with Vertical(id="approval-box"):
            title = Text()
            title.append("Allow ", style="bold")
            title.append(request.name, style="bold yellow")
            title.append("?  ", style="bold")
            title.append(request.summary, style="dim")
            yield Static(title, id="approval-title")
            with VerticalScroll(id="approval-preview"):
                yield Static(preview_renderable(request))
            yield OptionList(
                Option("1  Allow once", id=ApprovalChoice.ALLOW_ONCE.value),
                Option(f"2  {session_label}", id=ApprovalChoice.ALLOW_SESSION.value),
                Option("3  Deny", id=ApprovalChoice.DENY.value),
                Option("4  Deny with a note to the model", id=ApprovalChoice.DENY_WITH_NOTE.value),
                id="approval-choices",
            )
            note = Input(
                placeholder="Tell the model why, or what to do instead (Enter sends)", id="approval-note"
            )
            note.display = False
            yield note

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        self.query_one(OptionList).focus()

    def armed(self) -> bool:
        return time.monotonic() - self._opened >= self.arm_delay

    def on_key(self, event: events.Key) -> None:
        note = self.query_one("#approval-note", Input)
        if note.display:
            return
        if not self.armed():
            # Swallow everything that could answer: choice keys and Enter.
            if event.key in CHOICE_KEYS or event.key in ("enter", "space"):
                event.stop()
                event.prevent_default()
            return
        if event.key in CHOICE_KEYS:
            event.stop()
            event.prevent_default()
            self.choose(list(ApprovalChoice)[CHOICE_KEYS[event.key]])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self.armed():
            return
        self.choose(ApprovalChoice(event.option.id or ApprovalChoice.DENY.value))

    def choose(self, choice: ApprovalChoice) -> None:
        if choice is ApprovalChoice.DENY_WITH_NOTE:
            note = self.query_one("#approval-note", Input)
            note.display = True
            note.focus()
            return
        pattern = self.pattern if choice is ApprovalChoice.ALLOW_SESSION else ""
        self.dismiss(ApprovalDecision(choice, pattern=pattern))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(ApprovalDecision(ApprovalChoice.DENY_WITH_NOTE, note=event.value.strip()))

    def action_deny(self) -> None:
        note = self.query_one("#approval-note", Input)
        if note.display:  # Esc leaves the note, back to the choices
            note.display = False
            self.query_one(OptionList).focus()
            return
        self.dismiss(ApprovalDecision(ApprovalChoice.DENY))
