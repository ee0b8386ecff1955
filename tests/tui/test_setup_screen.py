"""The first-run set-up screen: a missing key is named before saving, it says how to quit (and Esc /
Ctrl+Q do), and at 80×24 it scrolls with nothing cut off on the right."""

from __future__ import annotations

import pytest
from helpers import wait_for

from catbuddy.config import Settings
from catbuddy.tui.screens.setup import QUIT_HINT, SetupScreen
from catbuddy.tui.screens.setup_config import is_local_endpoint, missing_key_message

REMOTE = "https://api.example.com/v1"
LOCAL = "http://localhost:11434/v1"


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CATBUDDY_TEST_KEY", raising=False)


def status_text(screen) -> str:
    return str(screen.query_one("#setup-key-status").render())


def result_text(screen) -> str:
    return str(screen.query_one("#setup-result").render())


async def setup_screen(app, pilot) -> SetupScreen:
    return await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen, what="setup")


def fill(screen, endpoint: str, model: str = "some-model", key: str = "", key_env: str = "OPENAI_API_KEY"):
    screen.query_one("#setup-endpoint").value = endpoint
    screen.query_one("#setup-model").value = model
    screen.query_one("#setup-key-env").value = key_env
    screen.query_one("#setup-key").value = key


@pytest.mark.parametrize(
    "url, local",
    [
        (LOCAL, True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        (REMOTE, False),
        ("https://api.openai.com/v1", False),
    ],
)
def test_local_endpoints_are_told_apart_from_remote_ones(url, local) -> None:
    assert is_local_endpoint(url) is local


async def test_a_missing_key_is_named_on_the_screen_before_saving(fake_app, no_key) -> None:
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, REMOTE)
        await wait_for(pilot, lambda: REMOTE in status_text(screen), what="the key warning for the endpoint")
        text = status_text(screen)
        assert f"No API key: the endpoint at {REMOTE} will likely refuse requests" in text
        assert "OPENAI_API_KEY" in text
        fill(screen, REMOTE, key="sk-typed")
        await wait_for(pilot, lambda: "typed above" in status_text(screen), what="the typed key")
        assert "No API key" not in status_text(screen)


async def test_a_key_in_the_named_variable_counts(fake_app, no_key, monkeypatch) -> None:
    monkeypatch.setenv("CATBUDDY_TEST_KEY", "sk-from-env")
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, REMOTE, key_env="CATBUDDY_TEST_KEY")
        await wait_for(pilot, lambda: "$CATBUDDY_TEST_KEY" in status_text(screen), what="the variable")


async def test_saving_without_a_key_for_a_remote_endpoint_asks_for_a_second_press(
    fake_app, workspace, no_key
):
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, REMOTE)
        await pilot.click("#setup-save")
        await wait_for(pilot, lambda: "again" in result_text(screen), what="the second-press instruction")
        assert "No API key" in result_text(screen)
        assert app.screen is screen and not (workspace.home / "config.toml").exists()
        # Textual ignores a click while the button still shows its 0.2 s pressed effect.
        save = screen.query_one("#setup-save")
        await wait_for(pilot, lambda: not save.has_class("-active"), what="the press effect to end")
        await pilot.click("#setup-save")
        await wait_for(pilot, lambda: not isinstance(app.screen, SetupScreen), what="saved")
    assert 'model = "some-model"' in (workspace.home / "config.toml").read_text()


async def test_a_local_endpoint_saves_without_a_key_at_once_but_says_so(fake_app, workspace, no_key):
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, LOCAL)
        await wait_for(pilot, lambda: "fine for a local server" in status_text(screen), what="the local note")
        assert status_text(screen).startswith("⚠ " + missing_key_message(LOCAL, "OPENAI_API_KEY")[:40])
        assert "fine for a local server" in status_text(screen)
        await pilot.click("#setup-save")
        await wait_for(pilot, lambda: not isinstance(app.screen, SetupScreen), what="saved")
    assert (workspace.home / "config.toml").exists()


@pytest.mark.parametrize("key", ["escape", "ctrl+q"])
async def test_esc_and_ctrl_q_quit_without_saving_and_the_screen_says_so(fake_app, workspace, key) -> None:
    app, holder = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        assert QUIT_HINT in str(screen.query_one("#setup-quit-hint").render())
        screen.query_one("#setup-model").value = "typed-but-not-saved"
        await pilot.press(key)
        await wait_for(pilot, lambda: not app.is_running, what="exit")
    assert app.return_value is None and "loop" not in holder
    assert not (workspace.home / "config.toml").exists()


async def test_at_80x24_the_form_fits_the_width_and_scrolls_to_its_buttons(fake_app, no_key) -> None:
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await setup_screen(app, pilot)
        box = screen.query_one("#setup-box")
        assert box.region.right <= 80 and box.region.bottom <= 24
        for widget in screen.query("#setup-box > *"):
            assert widget.region.right <= box.region.right  # nothing cut off on the right
        save = screen.query_one("#setup-save")
        save.focus()
        # Scrolled into view (focus scrolls after the next refresh: wait for it, do not sleep).
        await wait_for(pilot, lambda: box.region.contains_region(save.region), what="Save in view")
        assert save.region.height > 0


async def test_a_typed_key_says_it_lasts_one_run_unless_stored_and_the_box_says_yes_or_no(
    fake_app, no_key
) -> None:
    # Issue 31: "Store the key" is off by default, so a typed key lasted one run without saying so,
    # and the checkbox showed its state only by colour.
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, REMOTE, key="sk-typed")
        box = screen.query_one("#setup-store-key")
        await wait_for(pilot, lambda: "for this run only" in status_text(screen), what="one run")
        assert str(box.label).endswith(": no")
        box.value = True
        await wait_for(pilot, lambda: "stored in config.toml" in status_text(screen), what="stored")
        assert str(box.label).endswith(": yes")


async def test_a_changed_field_clears_what_the_last_test_said(fake_app, no_key) -> None:
    # Issue 31: the red "Could not reach …" stayed after the endpoint was changed.
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, "http://127.0.0.1:9/v1", key="sk-typed")
        await pilot.click("#setup-test")
        await wait_for(
            pilot, lambda: "Testing" not in result_text(screen) and result_text(screen), what="test"
        )
        screen.query_one("#setup-endpoint").value = LOCAL
        await wait_for(pilot, lambda: result_text(screen) == "", what="cleared")


async def test_at_80x24_the_second_press_instruction_is_scrolled_into_view(fake_app, no_key) -> None:
    # Issue 31: at 80×24 "Press Save and start again" was below the fold.
    app, _ = fake_app(settings=Settings())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await setup_screen(app, pilot)
        fill(screen, REMOTE)
        screen.query_one("#setup-model").focus()
        screen.query_one("#setup-box").scroll_home(animate=False)
        await pilot.pause(0.1)
        await pilot.press("enter")  # Input.Submitted saves, as the button does
        result = screen.query_one("#setup-result")
        box = screen.query_one("#setup-box")
        await wait_for(pilot, lambda: "again" in result_text(screen), what="the instruction")
        await wait_for(pilot, lambda: box.region.contains_region(result.region), what="in view")
