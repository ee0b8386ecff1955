"""/sessions and /resume: a picker of this project's sessions (first message, time, size)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

FIRST_MESSAGE_CHARS = 80


def format_time(value: Any) -> str:
    """Local time as `YYYY-MM-DD HH:MM` from an epoch number, an ISO string or a datetime."""
    if isinstance(value, int | float):
        moment = datetime.fromtimestamp(value)
    elif isinstance(value, datetime):
        moment = value.astimezone() if value.tzinfo else value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value[:16]
        moment = parsed.astimezone() if parsed.tzinfo else parsed
    else:
        return "?"
    return moment.strftime("%Y-%m-%d %H:%M")


def format_size(size: int) -> str:
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size = size / 1024  # type: ignore[assignment]
    return f"{size} B"


def session_label(info: Any, current: str | None) -> Text:
    """Two lines: the first user message, then time, size and the id to pass to `catbuddy --resume`."""
    first = " ".join((info.first_user_message or "(no messages)").split())
    if len(first) > FIRST_MESSAGE_CHARS:
        first = first[: FIRST_MESSAGE_CHARS - 1] + "…"
    text = Text()
    text.append(first, style="bold" if info.id == current else "")
    if info.id == current:
        text.append("  (current)", style="green")
    text.append("\n")
    text.append(f"  {format_time(info.last_activity or info.created_at)}", style="cyan")
    text.append(f" · {info.message_count} messages · {format_size(info.size_bytes)} · {info.id}", style="dim")
    return text


class SessionPicker(ModalScreen[str | None]):
    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    #sessions-list {
        height: auto;
        max-height: 30;
    }
    """
    type_through = True  # typing closes it; the keys go to the input (tui/type_through.py)
    BINDINGS = [Binding("escape", "cancel", "Close")]

    def __init__(self, sessions: list[Any], current: str | None) -> None:
        super().__init__(id="session-picker")
        # Newest first: the session a user wants back is almost always a recent one.
        self.sessions = sorted(sessions, key=lambda s: str(s.last_activity or s.created_at), reverse=True)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-box", classes="dialog picker"):
            yield Static(
                Text("Resume a session  (Enter opens · Esc closes)", style="bold"), classes="dialog-title"
            )
            if self.sessions:
                yield OptionList(
                    *[Option(session_label(info, self.current), id=info.id) for info in self.sessions],
                    id="sessions-list",
                )
            else:
                yield Static("No sessions yet in this project.", id="sessions-empty")

    def on_mount(self) -> None:
        if self.sessions:
            self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
