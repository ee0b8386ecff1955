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

from catbuddy.context.report import part_label
from catbuddy.tui.widgets.status import context_colour

CHART_CELLS = 30


def _bar(tokens: int, budget: int) -> str:
    if not budget:
        return ""
    cells = tokens * CHART_CELLS / budget
    full = int(cells)
    partial = "▏▎▍▌▋▊▉"[int((cells - full) * 7)] if cells - full >= 1 / 7 and full < CHART_CELLS else ""
    return "█" * min(full, CHART_CELLS) + partial


def context_table(report: Any) -> Group:
    budget = report.budget
    table = Table(box=None, pad_edge=False, expand=False, header_style="bold")
    table.add_column("part")
    table.add_column("tokens", justify="right")
    table.add_column("% budget", justify="right")
    table.add_column("", no_wrap=True)

    def row(name: str, tokens: int, style: str = "cyan") -> None:
        share = f"{100 * tokens / budget:.1f}%" if budget else "-"
        table.add_row(name, f"{tokens:,}", share, Text(_bar(tokens, budget), style=style))

    for layer in report.layers:
        row(f"system · {layer.name}", layer.tokens)
        for part in getattr(layer, "parts", ()):  # one line per file: instructions, SOUL.md, …
            row(f"    {part_label(part)}", part.tokens, "dim cyan")
    row("tool schemas", report.tools_tokens)
    row("summary", report.summary_tokens, "magenta")
    row(f"history ({report.history_messages} messages)", report.history_tokens, "green")
    colour = context_colour(report.used, budget, report.compact_threshold_tokens)
    table.add_row(
        Text("used", style="bold"),
        Text(f"{report.used:,}", style="bold"),
        f"{100 * report.used / budget:.1f}%" if budget else "-",
        Text(_bar(report.used, budget), style=colour),
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
    #context-box {
        width: 90%;
        max-width: 120;
        height: auto;
        max-height: 90%;
    }
    #context-box VerticalScroll {
        height: auto;
        max-height: 40;
    }
    """
    type_through = True  # typing closes it; the keys go to the input (tui/type_through.py)
    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def __init__(self, report: Any, memory: str = "") -> None:
        super().__init__(id="context-screen")
        self.report = report
        self.memory = memory  # pending entries and the last Dream (memory/status.py)

    def compose(self) -> ComposeResult:
        with Vertical(id="context-box", classes="dialog"):
            yield Static(Text("Context  (Esc closes · typing goes to the input)", style="bold"), classes="dialog-title")
            with VerticalScroll():
                yield Static(context_table(self.report), id="context-table")
                if self.memory:
                    yield Static(Text(self.memory, style="dim"), id="context-memory")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
