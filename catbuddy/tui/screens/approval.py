"""The approval dialog for exec, file writes and any other call that asks.

It shows what the tool put in its request — a command, a diff or text (``preview_kind``, the tool's own
``Tool.preview``) — and for a command the sandbox it will run in; it never looks at which tool asks.
Keys are ignored for ``ARM_DELAY`` seconds after it opens, so a user typing when it pops up does not
approve something by accident. Under the preview, one line says why it asks (read-only / writes in the
work root / destructive / dynamic / outside the work root, and why). "Allow for this session" is offered
only when the request has something to remember (a parsed command prefix or a tool name) and says in words
what it remembers ("git log, read-only forms"); a call that must be approved each time (catbuddy's own
files, a destructive command, one whose effect cannot be determined) has no session choice.
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
CHOICE_KEYS = {
    "1": ApprovalChoice.ALLOW_ONCE,
    "y": ApprovalChoice.ALLOW_ONCE,
    "2": ApprovalChoice.ALLOW_SESSION,
    "a": ApprovalChoice.ALLOW_SESSION,
    "3": ApprovalChoice.DENY,
    "n": ApprovalChoice.DENY,
    "4": ApprovalChoice.DENY_WITH_NOTE,
    "d": ApprovalChoice.DENY_WITH_NOTE,
}
SANDBOX_LINES = {
    "workspace-write": (
        "sandbox workspace-write: writes only in the work root and /tmp, no network",
        "green",
    ),
    "read-only": ("sandbox read-only: writes only in /tmp, no network", "green"),
    "off": ('no sandbox (sandbox = "off"): runs with your full permissions', "bold red"),
    "unavailable": ("no sandbox (bubblewrap unavailable): runs with your full permissions", "bold red"),
}


def preview_kind(request: ApprovalRequested) -> str:
    """ "command", "diff" or "text"; a request without one (from an older catbuddy) that names a
    sandbox runs a command."""
    return request.preview_kind or ("command" if request.sandbox else "")


def preview_renderable(request: ApprovalRequested) -> Syntax | Text:
    preview = request.preview or request.summary
    kind = preview_kind(request)
    if kind == "command":
        return Syntax(preview, "bash", word_wrap=True)
    if kind == "diff" or preview.lstrip().startswith(("---", "@@", "diff ", "+++")):
        return Syntax(preview, "diff", word_wrap=True)
    return Text(preview)


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    #approval-box {
        width: 90%;
        max-width: 110;
        height: auto;
        max-height: 90%;
        background: $surface;
        border: thick $warning;
        padding: 0 1;
    }
    #approval-title {
        margin: 0 0 1 0;
    }
    #approval-preview {
        height: auto;
        max-height: 20;
        border: round $panel-lighten-2;
    }
    #approval-choices {
        height: auto;
        margin: 1 0 0 0;
    }
    """
    BINDINGS = [Binding("escape", "deny", "Deny", show=False)]

    def __init__(self, request: ApprovalRequested, arm_delay: float | None = None) -> None:
        super().__init__(id="approval")
        self.request = request
        self.arm_delay = ARM_DELAY if arm_delay is None else arm_delay
        self.sandbox = request.sandbox  # a SandboxStatus.label, for exec
        self._opened = time.monotonic()

    @property
    def pattern(self) -> str:
        return self.request.suggested_pattern

    def choices(self) -> list[ApprovalChoice]:
        offered = list(ApprovalChoice)
        if not self.pattern:
            offered.remove(ApprovalChoice.ALLOW_SESSION)
        return offered

    def _label(self, choice: ApprovalChoice) -> str:
        number = list(ApprovalChoice).index(choice) + 1
        if choice is ApprovalChoice.ALLOW_SESSION:
            command = preview_kind(self.request) == "command"
            what = f"commands starting with `{self.pattern}`" if command else f"`{self.pattern}`"
            return f"{number}  Allow for this session  ({self.request.remembers or what})"
        return (
            f"{number}  "
            + {
                ApprovalChoice.ALLOW_ONCE: "Allow once",
                ApprovalChoice.DENY: "Deny",
                ApprovalChoice.DENY_WITH_NOTE: "Deny with a note to the model",
            }[choice]
        )

    def compose(self) -> ComposeResult:
        request = self.request
        with Vertical(id="approval-box"):
            title = Text()
            title.append("Allow ", style="bold")
            title.append(request.name, style="bold yellow")
            title.append("?  ", style="bold")
            title.append(request.summary, style="dim")
            yield Static(title, id="approval-title")
            with VerticalScroll(id="approval-preview"):
                yield Static(preview_renderable(request))
            if request.reason:  # why it asks, in one line: "destructive: `git reset --hard` discards …"
                yield Static(Text(request.reason, style="italic"), id="approval-reason")
            if preview_kind(request) == "command" and self.sandbox in SANDBOX_LINES:
                line, style = SANDBOX_LINES[self.sandbox]
                yield Static(Text(line, style=style), id="approval-sandbox")
            yield OptionList(
                *[Option(self._label(choice), id=choice.value) for choice in self.choices()],
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
            if CHOICE_KEYS[event.key] in self.choices():
                self.choose(CHOICE_KEYS[event.key])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self.armed():
            return
        self.choose(ApprovalChoice(event.option.id or ApprovalChoice.DENY.value))

    def choose(self, choice: ApprovalChoice) -> None:
        if choice not in self.choices():
            return
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
