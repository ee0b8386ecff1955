"""/context: where the window goes, per layer, with a bar chart against the budget."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from catbuddy.context.governance.report import part_label
from catbuddy.tui.widgets.status import context_colour

CHART_CELLS = 30
MIN_CHART_CELLS = 8
BOX_MAX_WIDTH = 120  # .dialog.picker in app.tcss: width 90%, max-width 120
NUMBER_COLUMNS = 6 + 8 + 3 * 2  # "tokens" and "% budget" columns, and the gaps between four columns
DIALOG_CHROME = 6  # the dialog's border and padding, and the scroll bar
BOX_MAX_HEIGHT = 0.9  # .dialog.picker in app.tcss: max-height 90%
TITLE_ROWS = 2 + 2  # the title and its margin, the top and bottom border


def chart_cells(available: int | None, label_width: int) -> int:
    """Bars shrink before the part names wrap: a narrow terminal keeps one line per part."""
    if available is None:
        return CHART_CELLS
    return max(MIN_CHART_CELLS, min(CHART_CELLS, available - label_width - NUMBER_COLUMNS))


def _bar(tokens: int, budget: int, width: int = CHART_CELLS) -> str:
    if not budget:
        return ""
    cells = tokens * width / budget
    full = int(cells)
    partial = "▏▎▍▌▋▊▉"[int((cells - full) * 7)] if cells - full >= 1 / 7 and full < width else ""
    return "█" * min(full, width) + partial


def context_table(report: Any, available: int | None = None) -> Group:
    """The table and the facts under it; ``available`` is the width it has (None: as wide as it likes)."""
    budget = report.budget
    rows: list[tuple[str, int, str]] = []
    for layer in report.layers:
        rows.append((f"system · {layer.name}", layer.tokens, "cyan"))
        for part in getattr(layer, "parts", ()):  # one line per file: instructions, SOUL.md, …
            rows.append((f"    {part_label(part)}", part.tokens, "dim cyan"))
    rows.append(("tool schemas", report.tools_tokens, "cyan"))
    rows.append(("summary", report.summary_tokens, "magenta"))
    rows.append((f"history ({report.history_messages} messages)", report.history_tokens, "green"))
    cells = chart_cells(available, max(len(name) for name, _, _ in rows))

    table = Table(box=None, pad_edge=False, expand=False, header_style="bold")
    table.add_column("part")
    table.add_column("tokens", justify="right")
    table.add_column("% budget", justify="right")
    table.add_column("", no_wrap=True)
    for name, tokens, style in rows:
        share = f"{100 * tokens / budget:.1f}%" if budget else "-"
        table.add_row(name, f"{tokens:,}", share, Text(_bar(tokens, budget, cells), style=style))
    colour = context_colour(report.used, budget, report.compact_threshold_tokens)
    table.add_row(
        Text("used", style="bold"),
        Text(f"{report.used:,}", style="bold"),
        f"{100 * report.used / budget:.1f}%" if budget else "-",
        Text(_bar(report.used, budget, cells), style=colour),
    )
    facts = Text()
    facts.append(f"model {report.model}: window {report.context_window:,}, ")
    facts.append(f"max output {report.max_output_tokens:,}\n")
    facts.append(f"budget {budget:,} tokens; ")
    facts.append(
        f"compaction at {report.compact_threshold_tokens:,} tokens or {report.compact_message_threshold} messages\n"
    )
    facts.append(f"calibration ×{report.calibration:.3f} ", style="bold")
    facts.append("(provider-reported prompt tokens ÷ local count)", style="dim")
    if report.sandbox:
        facts.append(f"\nexec sandbox: {report.sandbox}")
    folded = report.folded_messages
    if folded:
        facts.append(f"\nfolded: {folded:,} earlier messages, out of view but searchable with recall")
        facts.append(" (/compact undo brings the last fold back)", style="dim")
    return Group(table, Text(""), facts)


class ContextScreen(ModalScreen[None]):
    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    #context-scroll {
        height: auto;
    }
    """
    type_through = True  # typing closes it; the keys go to the input (tui/type_through.py)
    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def __init__(self, report: Any, memory: str = "", delegation: str = "") -> None:
        super().__init__(id="context-screen")
        self.report = report
        self.memory = memory  # pending entries and the last Dream (memory/status.py)
        self.delegation = delegation  # the plan and the subagent calls (agent/plan_report.py)

    def compose(self) -> ComposeResult:
        with Vertical(id="context-box", classes="dialog picker"):
            yield Static(
                Text("Context  (Esc closes · typing goes to the input)", style="bold"), classes="dialog-title"
            )
            with VerticalScroll(id="context-scroll"):
                yield Static(context_table(self.report, self.table_width()), id="context-table")
                if self.delegation:
                    yield Static(Text(self.delegation), id="context-plan")
                if self.memory:
                    yield Static(Text(self.memory, style="dim"), id="context-memory")

    def on_mount(self) -> None:
        self._fit()
        self.query_one("#context-scroll").focus()  # Up, Down, PageUp/Down, Home, End scroll it

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The table scrolls inside the box: an auto-height box would grow past the screen instead."""
        rows = max(3, int(self.app.size.height * BOX_MAX_HEIGHT) - TITLE_ROWS)
        self.query_one("#context-scroll").styles.max_height = rows

    def table_width(self) -> int:
        box = min(self.app.size.width * 9 // 10, BOX_MAX_WIDTH)  # .dialog.picker in app.tcss
        return box - DIALOG_CHROME

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
