"""Plain `catbuddy` opens the app without the command-line parser (catbuddy/__main__.py); anything with
arguments goes to the full command line. Run as the console script runs it, under a real pty."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from catbuddy import __version__

ENTRY = [sys.executable, "-m", "catbuddy"]  # the same main() as the console script
PTY_TIMEOUT = 30.0
ALT_SCREEN = "\x1b[?1049h"  # what Textual writes first when the app opens
READY = "Ask catbuddy"  # the prompt's placeholder: the app is on screen and takes keys
CTRL_C = b"\x03"


class Terminal:
    """A child on a pseudo-terminal: read what it writes, type keys."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True
        )
        os.close(slave)
        self.output = b""

    def read_until(self, text: str | None, timeout: float = PTY_TIMEOUT) -> str:
        """Output so far, once ``text`` appears (None: once the child exits)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            decoded = self.output.decode("utf-8", "replace")
            if text is not None and text in decoded:
                return decoded
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # EIO: the child closed its end
                    data = b""
                if data:
                    self.output += data
                    continue
            if ready or self.process.poll() is not None:  # closed, or exited with nothing left to read
                if text is None:
                    return self.output.decode("utf-8", "replace")
                break
        raise AssertionError(f"waited {timeout} s for {text!r}; got {self.output[-2000:]!r}")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> int:
        try:
            return self.process.wait(timeout=PTY_TIMEOUT)
        finally:
            os.close(self.master)
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture
def terminal_env(llm_env: dict[str, str]) -> dict[str, str]:
    return {**llm_env, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}


def test_plain_catbuddy_opens_the_app_and_says_how_to_resume_after_it(project, terminal_env):
    terminal = Terminal(ENTRY, terminal_env, project)
    try:
        assert ALT_SCREEN in terminal.read_until(READY)
        terminal.type(CTRL_C)
        time.sleep(0.2)
        terminal.type(CTRL_C)  # twice: the app exits
        output = terminal.read_until(None)
    finally:
        code = terminal.close()

    assert code == 0, output[-2000:]
    assert "Resume this session with: catbuddy --resume " in output
    assert "Traceback" not in output


def test_plain_catbuddy_with_a_broken_config_says_what_is_wrong_and_exits_2(project, terminal_env, tmp_path):
    home = tmp_path / "broken-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "scripted"\napproval = [not toml\n')
    terminal = Terminal(ENTRY, {**terminal_env, "CATBUDDY_HOME": str(home)}, project)
    try:
        output = terminal.read_until(None)
    finally:
        code = terminal.close()

    assert code == 2
    assert output.startswith("catbuddy: ") and "config.toml" in output
    assert ALT_SCREEN not in output and "Traceback" not in output


def test_with_arguments_the_full_command_line_answers(project, llm_env):
    done = subprocess.run(
        [*ENTRY, "--version"], cwd=project, env=llm_env, capture_output=True, text=True, timeout=PTY_TIMEOUT
    )

    assert done.returncode == 0 and done.stdout.strip() == f"catbuddy {__version__}"


def test_the_console_script_is_the_launcher() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["catbuddy"] == "catbuddy.__main__:main"
