"""The always-visible status bar: model, loop state, context used of the budget, the last call's
prompt-cache hit rate, approval mode, the sandbox when commands are not sandboxed, session."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.widgets import Static

BAR_CELLS = 10
WARN_RATIO = 0.75  # of the compaction threshold: the bar turns yellow
DANGER_RATIO = 0.95  # and red when compaction is about to run

SHORT_ID_CHARS = 8  # of a session id in an unknown format, when the bar is narrow
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
    plan_mode: bool = False  # plan mode: only reading tools run (docs/architecture.md §5c)


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


@dataclass(frozen=True)
class _Fit:
    """One way of laying the bar out; ``render_status`` takes the first that fits the width."""

    bar_cells: int = BAR_CELLS
    session: str = "full"  # "full", "short" (a prefix `--resume` accepts) or "" (left out)
    session_label: bool = True
    esc_hint: bool = True  # "· Esc stops" while running (the placeholder says it too)
    cache: bool = True  # the prompt-cache hit figure, when the provider reports one


# From the fullest to the barest. Model, state, the context figure and the approval mode (and a
# sandbox that is off) are always kept; the session id shrinks, then the bar, then the id goes.
FITS = (
    _Fit(),
    _Fit(session="short"),
    _Fit(bar_cells=5, session="short", session_label=False),
    _Fit(bar_cells=0, session="short", session_label=False),
    _Fit(bar_cells=0, session=""),
    _Fit(bar_cells=0, session="", cache=False),
    _Fit(bar_cells=0, session="", cache=False, esc_hint=False),
)


def short_session_id(session_id: str) -> str:
    """The id up to its seconds (``20261203-074621``): unique in practice, and a prefix `--resume`
    and `sessions show` accept. Ids of another shape keep their first ``SHORT_ID_CHARS`` characters."""
    parts = session_id.split("-")
    if len(parts) == 3 and all(p.isalnum() for p in parts) and len(parts[0]) == 8:
        return f"{parts[0]}-{parts[1]}"
    return session_id[:SHORT_ID_CHARS]


def render_status(info: StatusInfo, width: int | None = None) -> Text:
    """The status line; with ``width``, the fullest layout of ``FITS`` that fits in it."""
    text = Text()
    for fit in FITS:
        text = _render(info, fit)
        if width is None or text.cell_len <= width:
            break
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


def _render(info: StatusInfo, fit: _Fit) -> Text:
    text = Text()
    text.append(f" {info.model or 'no model'} ", style="bold")
    text.append("│ ", style="dim")
    text.append(info.state, style=STATE_STYLES.get(info.state, ""))
    if info.queued:
        text.append(f" (+{info.queued} queued)", style="yellow")
    if fit.esc_hint and info.state in ("running", "compacting"):
        text.append(" · Esc stops", style="dim")
    text.append(" │ ", style="dim")
    colour = context_colour(info.used, info.budget, info.compact_at)
    percent = 0 if not info.budget else round(100 * info.used / info.budget)
    text.append("ctx ", style="dim")
    space = ""
    if fit.bar_cells:
        text.append(context_bar(info.used, info.budget, fit.bar_cells), style=colour)
        space = " "
    # The figure is /context's "used" total, rounded by short_tokens (0.1k steps below 100k).
    text.append(f"{space}{short_tokens(info.used)}/{short_tokens(info.budget)} {percent}%", style=colour)
    if info.cache_hit is not None and fit.cache:
        text.append(f" · cache {info.cache_hit:.0%}", style="dim")
    if info.plan_mode:
        text.append(" │ ", style="dim")
        text.append("PLAN MODE", style="bold magenta")
    if info.approval:
        text.append(" │ ", style="dim")
        text.append(f"approval {info.approval}", style="red" if info.approval == "yolo" else "cyan")
    if info.sandbox in UNSANDBOXED:
        text.append(" │ ", style="dim")
        text.append(f"sandbox {info.sandbox}", style="bold red")
    if info.session_id and fit.session:
        shown = info.session_id if fit.session == "full" else short_session_id(info.session_id)
        text.append(" │ ", style="dim")
        text.append(f"session {shown}" if fit.session_label else shown, style="dim")
    return text


class StatusBar(Static):
    def __init__(self) -> None:
        super().__init__(id="status")
        self.info = StatusInfo()

    def set(self, **changes: object) -> None:
        self.info = replace(self.info, **changes)  # type: ignore[arg-type]
        self.refresh()

    def render(self) -> Text:
        return render_status(self.info, self.size.width or None)
