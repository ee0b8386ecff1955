"""The blocks a transcript is made of: user messages, streamed replies, tool calls, notices.

A reply (``AssistantBlock``) lives in ``reply.py``: it is a Markdown widget, and Markdown (with
markdown-it) is imported only once a reply is shown, after the app's first frame.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.containers import Vertical
from textual.widgets import Static

from catbuddy.tool_meta import ToolMeta, ToolStatus
from catbuddy.tui.widgets.block import TranscriptBlock

SUMMARY_CHARS = 90  # key arguments shown on a collapsed tool block
DETAIL_CHARS = 20_000  # an expanded result longer than this is cut (the model saw all of it)
# A tool block's status: while it runs, then how the call ended (the stored ToolStatus, the same live
# and after a resume); "stopped": the turn ended before the call was answered.
STATUS_MARKS = {
    "running": ("…", "yellow"),
    "waiting": ("?", "magenta"),
    "done": ("✓", "green"),
    "error": ("✗", "red"),
    "stopped": ("■", "dim"),
    "unknown": ("·", "dim"),
}
ELAPSED_AFTER = 1.0  # seconds: a running call shows how long it has been running from then on
FINISHED = {ToolStatus.OK: "done", ToolStatus.UNKNOWN: "unknown"}  # every other status failed: "error"


class UserBlock(Static, TranscriptBlock):
    def __init__(self, text: str, ordinal: int | None = None) -> None:
        super().__init__(Text(text), classes="user-block", markup=False)
        self.user_ordinal = ordinal
        self.text = text


def _short_arguments(arguments: str | dict[str, Any]) -> str:
    data: Any = arguments
    if isinstance(arguments, str):
        try:
            data = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            data = arguments
    if isinstance(data, dict):
        parts = [
            f"{key}={value!r}" if not isinstance(value, str) else f"{key}={value}"
            for key, value in data.items()
        ]
        text = "  ".join(parts)
    else:
        text = str(data)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _pretty_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return arguments


class ToolBlock(Vertical, TranscriptBlock, can_focus=True):
    """A tool call on one line (name, key arguments, status, duration); Enter or a click shows it all."""

    BINDINGS = [("enter", "toggle_details", "Expand")]
    typed_to_input = True  # tui/type_through.py: text typed while it has focus goes to the input

    def __init__(self, call_id: str, name: str, arguments: str, summary: str = "") -> None:
        super().__init__(classes="tool-block")
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.summary = summary or _short_arguments(arguments)
        self.status = "running"
        self.outcome: ToolMeta | None = None  # how the call ended, once it has
        self.result = ""
        self.display_text: str | None = None
        self.duration = 0.0
        self.expanded = False
        self.progress = ""  # while a `task` call runs: its subagent's current call
        self.started = time.monotonic()
        self._header = Static(self.header_text(), classes="tool-header")

    def compose(self):  # type: ignore[no-untyped-def]
        yield self._header

    def on_mount(self) -> None:
        if self.status in ("running", "waiting"):
            self._ticker = self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        if self.status == "running":
            self.refresh_header()
        elif self.status != "waiting":
            self._ticker.stop()

    def header_text(self) -> Text:
        """The one line a collapsed call shows: name, key argument, status mark, how it ended, time."""
        marker = "▾" if self.expanded else "▸"
        icon, style = STATUS_MARKS[self.status]
        text = Text()
        text.append(f"{marker} ", style="dim")
        text.append(self.tool_name, style="bold")
        if self.summary:
            text.append(f"  {self.summary}", style="dim")
        text.append(f"  {icon}", style=style)
        running_for = time.monotonic() - self.started
        if self.status == "running" and running_for >= ELAPSED_AFTER:
            text.append(f" {running_for:.0f}s", style="dim")
        if self.outcome is not None and self.outcome.summary:
            text.append(f" {self.outcome.summary}", style=style if self.status == "error" else "dim")
        if self.status in ("done", "error") and self.duration:
            shown = f"{self.duration * 1000:.0f}ms" if self.duration < 1 else f"{self.duration:.1f}s"
            text.append(f" {shown}", style="dim")
        if self.status == "waiting":
            text.append(" waiting for approval", style="magenta")
        elif self.status == "running" and self.progress:
            text.append(f" · {self.progress}", style="dim")
        return text

    def set_progress(self, text: str) -> None:
        self.progress = text[:SUMMARY_CHARS]
        self.refresh_header()

    def refresh_header(self) -> None:
        self._header.update(self.header_text())
        self.set_class(self.status == "error", "error")

    def set_status(self, status: str) -> None:
        self.status = status
        self.refresh_header()

    def finish(
        self,
        result: str,
        is_error: bool,
        duration: float,
        display: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """The call ended. Its status comes from its stored ``meta`` (an event from an older catbuddy may
        have none: then ``is_error`` decides)."""
        self.result = result
        self.display_text = display
        self.duration = duration
        if meta:
            self.outcome = ToolMeta.from_json(meta)
            self.status = FINISHED.get(self.outcome.status, "error")
        else:
            self.status = "error" if is_error else "done"
        self.refresh_header()

    def finish_stored(self, result: str, meta: Mapping[str, Any] | None) -> None:
        """A call of a resumed session: as it ended live, from its stored meta; without one (a session
        written before results carried it) the status is unknown, never guessed."""
        outcome = ToolMeta.from_json(meta)
        shown = outcome.extra.get("display")  # a tool's stored display (a subagent's transcript)
        self.finish(result, False, outcome.duration or 0.0, shown if isinstance(shown, str) else None,
                    outcome.to_json())  # fmt: skip
        if self.expanded:
            self._show_details()

    def on_click(self) -> None:
        self.action_toggle_details()

    def action_toggle_details(self) -> None:
        self.expanded = not self.expanded
        self.refresh_header()
        if self.expanded:
            self._show_details()
        else:
            self.query(".tool-details").remove()

    def _show_details(self) -> None:
        from rich.syntax import Syntax  # pygments: only when a tool call is opened

        self.query(".tool-details").remove()
        shown = self.display_text or self.result
        if len(shown) > DETAIL_CHARS:
            shown = shown[:DETAIL_CHARS] + f"\n… ({len(shown) - DETAIL_CHARS:,} more characters)"
        lexer = "diff" if shown.startswith(("---", "@@", "diff ")) else "text"
        details = Vertical(
            Static(Syntax(_pretty_arguments(self.arguments), "json", word_wrap=True), classes="tool-args"),
            Static(
                Syntax(shown, lexer, word_wrap=True) if shown else Text("(no result yet)", style="dim"),
                classes="tool-result",
            ),
            classes="tool-details",
        )
        self.mount(details)


class NoticeBlock(Static, TranscriptBlock):
    """Compaction, governance, retries, errors: one styled line (or a few)."""

    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__(Text(text), classes=f"notice notice-{level}", markup=False)
        self.level = level
        self.text = text
