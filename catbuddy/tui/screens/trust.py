""""Trust this project's settings?": shown before anything from a project config runs (MCP servers start
only after it), the first time catbuddy meets risky settings in a project and whenever they change.

``TrustScreen`` is a modal that dismisses with True (trust), False (don't trust: ignore them) or None
(closed with Esc: ignore them now, ask again next time). ``ask_trust`` shows it in a small app of its own,
for use before the main app starts. Keys are ignored for ``ARM_DELAY`` seconds after it opens, so typing
that was meant for something else does not answer it.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from catbuddy.trust import ProjectTrust, TrustState

ARM_DELAY = 0.5
TRUST, DISTRUST = "trust", "distrust"
KEYS = {"y": TRUST, "1": TRUST, "t": TRUST, "n": DISTRUST, "2": DISTRUST, "d": DISTRUST}


class TrustScreen(ModalScreen[bool | None]):
    BINDINGS = [Binding("escape", "later", "Decide later", show=False)]
    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    #trust-box { width: 90%; max-width: 110; height: auto; max-height: 90%; border: thick $warning;
                 background: $surface; padding: 0 1; }
    #trust-settings { height: auto; max-height: 20; border: round $panel-lighten-2; }
    #trust-choices { height: auto; margin: 1 0 0 0; }
    """

    def __init__(self, project: ProjectTrust, arm_delay: float = ARM_DELAY) -> None:
        super().__init__(id="trust")
        self.project = project
        self.arm_delay = arm_delay
        self._opened = time.monotonic()

    def compose(self) -> ComposeResult:
        project = self.project
        with Vertical(id="trust-box", classes="dialog"):
            title = Text("Trust this project's settings?", style="bold")
            if project.state is TrustState.CHANGED:
                title.append("  (they changed since you last decided)", style="yellow")
            yield Static(title, classes="dialog-title")
            intro = Text()
            intro.append(str(project.config_path), style="bold cyan")
            intro.append(
                " has settings that run code or widen permissions. Until you trust them they are ignored "
                "and nothing from them runs:",
            )
            yield Static(intro, id="trust-intro")
            with VerticalScroll(id="trust-settings"):
                yield Static(Text("\n".join(f"• {line}" for line in project.lines())))
            yield OptionList(
                Option("1  Trust them (remembered until they change)", id=TRUST),
                Option("2  Don't trust them: ignore them for this project", id=DISTRUST),
                id="trust-choices",
            )
            yield Static(Text("Esc: ignore them now, ask again next time", style="dim"))

    def on_mount(self) -> None:
        self._opened = time.monotonic()
        options = self.query_one(OptionList)
        options.highlighted = 1  # Enter alone keeps the settings ignored: trusting takes a choice
        options.focus()

    def armed(self) -> bool:
        return time.monotonic() - self._opened >= self.arm_delay

    def on_key(self, event: events.Key) -> None:
        if (event.key in KEYS or event.key in ("enter", "space")) and not self.armed():
            event.stop()
            event.prevent_default()
            return
        if event.key in KEYS:
            event.stop()
            event.prevent_default()
            self.dismiss(KEYS[event.key] == TRUST)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.armed():
            self.dismiss(event.option.id == TRUST)

    def action_later(self) -> None:
        self.dismiss(None)


class TrustPromptApp(App[bool | None]):
    """Only the trust dialog: what `catbuddy` shows before its main app when a decision is needed."""

    def __init__(self, project: ProjectTrust, arm_delay: float = ARM_DELAY) -> None:
        super().__init__()
        self.project = project
        self.arm_delay = arm_delay

    def on_mount(self) -> None:
        self.push_screen(TrustScreen(self.project, self.arm_delay), self.exit)


def ask_trust(project: ProjectTrust, *, inline: bool = False) -> bool | None:
    return TrustPromptApp(project).run(inline=inline)
