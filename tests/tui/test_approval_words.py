"""The approval dialog says why it asks in one line, and what "allow for this session" remembers in words."""

from __future__ import annotations

from typing import Any

from helpers import wait_for
from textual.app import App
from textual.widgets import OptionList, Static

from catbuddy.agent import events as ev
from catbuddy.tui.screens.approval import ApprovalScreen

SIZE = (100, 32)


class Host(App[None]):
    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.dialog = screen
        self.answers: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.answers.append)


def request(command: str, reason: str, pattern: str = "", remembers: str = "") -> ev.ApprovalRequested:
    return ev.ApprovalRequested(
        call_id="c1", name="exec", arguments={"command": command}, summary=command, preview=command,
        suggested_pattern=pattern, reason=reason, sandbox="workspace-write", remembers=remembers,
    )  # fmt: skip


async def shown(req: ev.ApprovalRequested) -> tuple[str, list[str]]:
    host = Host(ApprovalScreen(req, arm_delay=0.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, ApprovalScreen))
        reason = str(host.screen.query_one("#approval-reason", Static).render())
        options = host.screen.query_one(OptionList)
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return reason, labels


async def test_the_dialog_says_what_a_session_approval_remembers() -> None:
    reason, labels = await shown(
        request("git log -n 5", "read-only: git log (asks: tools.auto_allow_read_only is off)", "git log",
                "git log, read-only forms")
    )  # fmt: skip
    assert reason == "read-only: git log (asks: tools.auto_allow_read_only is off)"
    assert "2  Allow for this session  (git log, read-only forms)" in labels


async def test_a_destructive_command_says_why_and_offers_no_session_choice() -> None:
    why = "destructive: `git reset --hard` discards uncommitted changes; catbuddy asks every time"
    reason, labels = await shown(request("git reset --hard", why))
    assert reason == why
    assert not any("Allow for this session" in label for label in labels)
