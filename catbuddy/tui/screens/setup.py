"""First run: endpoint, model and key, a connection test, then config.toml (existing keys kept).

A missing key is said on the screen before saving (a local server may need none; a remote one will
refuse), saving without one asks for a second press unless the endpoint is local, and Esc or Ctrl+Q
leaves without writing anything. The form scrolls, so it fits 80×24.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Input, Label, Static

from catbuddy.tui.screens.setup_config import (
    check_connection,
    is_local_endpoint,
    missing_key_message,
    update_config,
)

DEFAULT_ENDPOINT = "https://api.openai.com/v1"
QUIT_HINT = "Esc or Ctrl+Q quits without saving · Tab moves between fields"
STORE_KEY_LABEL = "Store the key in config.toml (plain text, file mode 600)"


@dataclass(frozen=True)
class SetupResult:
    base_url: str
    model: str
    api_key_env: str
    api_key: str | None  # the key to use now (typed, or from the environment variable)


class SetupScreen(Screen[SetupResult]):
    # Parsed when the screen first opens, not with the app's stylesheet before its first frame.
    DEFAULT_CSS = """
    SetupScreen {
        align: center middle;
    }
    #setup-box {
        width: 100%;
        max-width: 84;
        height: auto;
        max-height: 100%;
        scrollbar-size-vertical: 1;
    }
    #setup-quit-hint {
        margin: 0 0 1 0;
    }
    #setup-key-status {
        height: auto;
    }
    #setup-box Label {
        margin: 0;
    }
    .setup-help {
        color: $text-muted;
    }
    #setup-buttons {
        height: auto;
        margin: 1 0 0 0;
    }
    #setup-buttons Button {
        margin: 0 2 0 0;
    }
    #setup-result {
        margin: 1 0 0 0;
        height: auto;
        min-height: 3;  /* room for what a test or a save says, so bringing it into view is exact */
    }
    """
    BINDINGS = [
        Binding("escape", "quit_setup", "Quit", show=False),
        Binding("ctrl+q", "quit_setup", "Quit", show=False, priority=True),
    ]

    def __init__(self, config_path: Path, base_url: str | None, api_key_env: str) -> None:
        super().__init__(id="setup")
        self.config_path = config_path
        self.initial_base_url = base_url or DEFAULT_ENDPOINT
        self.initial_key_env = api_key_env
        self._keyless_confirmed = False  # "Save and start" pressed once already without a key

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="setup-box", classes="dialog"):
            yield Static(Text("Welcome to catbuddy — connect a model", style="bold"), classes="dialog-title")
            yield Static(Text(QUIT_HINT, style="dim"), id="setup-quit-hint")
            yield Static(
                "Any OpenAI-compatible endpoint works: OpenAI, DeepSeek, OpenRouter, Ollama, vLLM, llama.cpp. "
                "No key yet? Try `catbuddy demo`.",
                classes="setup-help",
            )
            yield Label("Endpoint (base URL)")
            yield Input(self.initial_base_url, id="setup-endpoint")
            yield Label("Model")
            yield Input(placeholder="e.g. gpt-4o, deepseek-chat, qwen2.5-coder", id="setup-model")
            yield Label("API key environment variable")
            yield Input(self.initial_key_env, id="setup-key-env")
            yield Label("API key (optional: leave empty to read it from the variable above)")
            yield Input(password=True, id="setup-key")
            yield Static("", id="setup-key-status")
            yield Checkbox(_store_label(False), id="setup-store-key")
            with Horizontal(id="setup-buttons"):
                yield Button("Test connection", id="setup-test")
                yield Button("Save and start", id="setup-save", variant="primary")
            yield Static("", id="setup-result")
            yield Static(Text(f"Writes {self.config_path}", style="dim"), id="setup-path")

    def on_mount(self) -> None:
        self.query_one("#setup-model", Input).focus()
        self._show_key_status()

    def _value(self, name: str) -> str:
        return self.query_one(f"#setup-{name}", Input).value.strip()

    def _key(self) -> str:
        return self._value("key") or os.environ.get(self._value("key-env"), "").strip()

    def _say(self, message: str, ok: bool) -> None:
        result = self.query_one("#setup-result", Static)
        result.update(Text(message, style="green" if ok else "red"))
        # At 80×24 the line sits below the buttons: bring it into view once its new text is laid out.
        self.call_after_refresh(result.scroll_visible, animate=False)

    def key_problem(self) -> str:
        """What the screen says about the key: empty when there is one."""
        if self._key():
            return ""
        return missing_key_message(self._value("endpoint"), self._value("key-env"))

    def _show_key_status(self) -> None:
        problem = self.key_problem()
        status = self.query_one("#setup-key-status", Static)
        if problem:
            status.update(Text(f"⚠ {problem}", style="yellow"))
        elif self._value("key"):
            stored = self.query_one("#setup-store-key", Checkbox).value
            kept = (
                "stored in config.toml on save"
                if stored
                else "for this run only (tick the box below to keep it)"
            )
            status.update(Text(f"✓ API key typed above, {kept}", style="green"))
        else:
            status.update(Text(f"✓ API key from ${self._value('key-env')}", style="green"))

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        self._keyless_confirmed = False
        self._show_key_status()
        # What the last test or save said was about the values before this change.
        self.query_one("#setup-result", Static).update("")

    @on(Checkbox.Changed, "#setup-store-key")
    def _store_changed(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = _store_label(event.value)  # said in words, not only by colour
        self._show_key_status()

    def _problem(self) -> str:
        if not self._value("endpoint").startswith(("http://", "https://")):
            return "The endpoint must start with http:// or https://"
        if not self._value("model"):
            return "Enter a model name."
        if not self._value("key-env") and not self._value("key"):
            return "Give an API key or the environment variable that holds it."
        return ""

    @on(Button.Pressed, "#setup-test")
    async def run_test(self) -> None:
        problem = self._problem()
        if problem:
            self._say(problem, False)
            return
        self._say("Testing…", True)
        result = await check_connection(
            self._value("endpoint"), self._key(), self._value("model"), key_env=self._value("key-env")
        )
        self._say(result.message, result.ok)

    @on(Button.Pressed, "#setup-save")
    @on(Input.Submitted)
    def save(self) -> None:
        problem = self._problem()
        if problem:
            self._say(problem, False)
            return
        if (
            self.key_problem()
            and not is_local_endpoint(self._value("endpoint"))
            and not self._keyless_confirmed
        ):
            self._keyless_confirmed = True
            self._say(f"{self.key_problem()} Press Save and start again to start without a key.", False)
            return
        values = {
            "base_url": self._value("endpoint"),
            "model": self._value("model"),
            "api_key_env": self._value("key-env") or "OPENAI_API_KEY",
        }
        if self._value("key") and self.query_one("#setup-store-key", Checkbox).value:
            values["api_key"] = self._value("key")
        try:
            update_config(self.config_path, values)
        except (OSError, ValueError) as exc:
            self._say(f"Could not write {self.config_path}: {exc}", False)
            return
        self.dismiss(
            SetupResult(values["base_url"], values["model"], values["api_key_env"], self._key() or None)
        )

    def action_quit_setup(self) -> None:
        self.app.exit(None)


def _store_label(on: bool) -> str:
    return f"{STORE_KEY_LABEL}: {'yes' if on else 'no'}"
