"""The always-visible status bar: model, loop state, context used of the budget, the last call's
prompt-cache hit rate, approval mode, the sandbox when commands are not sandboxed, session."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.widgets import Static

BAR_CELLS = 10
WARN_RATIO = 0.75  # of the compaction threshold: the bar turns yellow
DANGER_RATIO = 0.95  # and red when compaction is about to run

UNSANDBOXED = ("off", "unavailable")  # sandbox labels the status bar warns about

STATE_STYLES = {
    "idle": "green",
    "running": "bold yellow",
    "compacting": "bold magenta",
    "stopping": "bold red",
    "starting": "dim",
    "setup": "dim",
}


@dataclass(frozen=True)
class StatusInfo:
    model: str = ""
    state: str = "starting"
    used: int = 0
    budget: int = 0
    compact_at: int = 0
    session_id: str = ""
    approval: str = ""
    queued: int = 0
    sandbox: str = ""  # SandboxStatus.label; shown only when commands are not sandboxed
    cache_hit: float | None = None  # share of the last call's prompt served from the provider's cache


def short_tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 100_000:
        return f"{count / 1000:.0f}k"
    if count >= 1000:
        return f"{count / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return str(count)


def context_colour(used: int, budget: int, compact_at: int) -> str:
    limit = compact_at or budget
    if not limit:
        return "dim"
    ratio = used / limit
    if ratio >= DANGER_RATIO:
        return "red"
    if ratio >= WARN_RATIO:
        return "yellow"
    return "green"


def context_bar(used: int, budget: int, cells: int = BAR_CELLS) -> str:
    filled = 0 if not budget else min(cells, round(cells * used / budget))
    return "█" * filled + "░" * (cells - filled)


def render_status(info: StatusInfo) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {info.model or 'no model'} ", style="bold")
    text.append("│ ", style="dim")
    text.append(info.state, style=STATE_STYLES.get(info.state, ""))
    if info.queued:
        text.append(f" (+{info.queued} queued)", style="yellow")
    if info.state in ("running", "compacting"):
        text.append(" · Esc stops", style="dim")
    text.append(" │ ", style="dim")
    colour = context_colour(info.used, info.budget, info.compact_at)
    percent = 0 if not info.budget else round(100 * info.used / info.budget)
    text.append("ctx ", style="dim")
    text.append(context_bar(info.used, info.budget), style=colour)
    text.append(f" {short_tokens(info.used)}/{short_tokens(info.budget)} {percent}%", style=colour)
    if info.cache_hit is not None:
        text.append(f" · cache {info.cache_hit:.0%}", style="dim")
    # The approval mode before the session id: on a narrow terminal the line is cut at the end, and
    # the mode matters more at a glance than the id.
    if info.approval:
        text.append(" │ ", style="dim")
        text.append(f"approval {info.approval}", style="red" if info.approval == "yolo" else "cyan")
    if info.sandbox in UNSANDBOXED:
        text.append(" │ ", style="dim")
        text.append(f"sandbox {info.sandbox}", style="bold red")
    if info.session_id:
        text.append(" │ ", style="dim")
        text.append(f"session {info.session_id}", style="dim")
    return text


class StatusBar(Static):
    def __init__(self) -> None:
        super().__init__(id="status")
        self.info = StatusInfo()

    def set(self, **changes: object) -> None:
        self.info = replace(self.info, **changes)  # type: ignore[arg-type]
        self.update(render_status(self.info))
