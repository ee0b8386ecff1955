"""The plan panel above the input (docs/architecture.md §5c): the steps `update_plan` set, the one in
progress highlighted; collapsed, one line (progress and the current step). Click (or Ctrl+T) toggles it;
it is hidden while the session has no plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text
from textual.widgets import Static

MARKS = {"pending": ("○", "dim"), "in_progress": ("▶", "bold yellow"), "done": ("✓", "green"),
         "cancelled": ("✗", "dim strike")}  # fmt: skip
MAX_EXPANDED_STEPS = 12  # a longer plan shows the steps around the current one


class PlanPanel(Static):
    DEFAULT_CSS = """
    PlanPanel {
        dock: bottom;
        height: auto;
        max-height: 14;
        padding: 0 1;
        border-top: solid $panel-lighten-2;
        display: none;
    }
    PlanPanel.has-plan {
        display: block;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="plan-panel")
        self.steps: list[dict[str, str]] = []
        self.explanation = ""
        self.collapsed = False

    def show_plan(self, steps: Sequence[Mapping[str, str]], explanation: str = "") -> None:
        self.steps = [dict(step) for step in steps]
        self.explanation = explanation
        self.set_class(bool(self.steps), "has-plan")
        self.update(self.render_plan())

    def toggle(self) -> None:
        self.collapsed = not self.collapsed
        self.update(self.render_plan())

    def on_click(self) -> None:
        self.toggle()

    def render_plan(self) -> Text:
        return render_plan(self.steps, collapsed=self.collapsed)


def render_plan(steps: Sequence[Mapping[str, str]], *, collapsed: bool = False) -> Text:
    text = Text()
    if not steps:
        return text
    finished = sum(1 for s in steps if s.get("status") in ("done", "cancelled"))
    current = next((i for i, s in enumerate(steps) if s.get("status") == "in_progress"), None)
    text.append("▸ " if collapsed else "▾ ", style="dim")
    text.append(f"Plan {finished}/{len(steps)} done", style="bold")
    if collapsed:
        if current is not None:
            text.append(f" · now: {steps[current].get('step', '')}", style="yellow")
        return text
    text.append("  (click or Ctrl+T to fold)", style="dim")
    start = 0
    if len(steps) > MAX_EXPANDED_STEPS:  # keep the current step in view
        anchor = current if current is not None else finished
        start = max(0, min(anchor - MAX_EXPANDED_STEPS // 3, len(steps) - MAX_EXPANDED_STEPS))
    shown = steps[start : start + MAX_EXPANDED_STEPS]
    if start:
        text.append(f"\n  … {start} earlier", style="dim")
    for step in shown:
        mark, style = MARKS.get(step.get("status", ""), ("?", ""))
        text.append(f"\n  {mark} ", style=style)
        text.append(step.get("step", ""), style=style if step.get("status") == "in_progress" else "")
    rest = len(steps) - start - len(shown)
    if rest > 0:
        text.append(f"\n  … {rest} more", style="dim")
    return text
