"""What every command shares to start: the workspace and settings from the global options, the
project-trust question, the terminal app, the exit without teardown (docs/architecture.md §10).

Typer-free, so that plain `catbuddy` (``catbuddy/__main__.py``) opens the app without building the
command-line parser; ``catbuddy.cli``'s commands load through the same functions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.errors import EXIT_FAILED, EXIT_USAGE, CatbuddyError

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.workspace import Workspace

EXIT_OK = 0

# The command line without typer (docs/architecture.md §10): `catbuddy "PROMPT"` opens the app with that
# message sent, `catbuddy -p "PROMPT"` is `catbuddy run "PROMPT"`. Kept equal to cli.py's commands and
# global options by tests/cli/test_cli_first_message.py.
COMMAND_NAMES = frozenset(
    {"demo", "init", "count", "context", "run", "sessions", "compact", "dream", "memory", "skills", "mcp",
     "doctor", "acp", "agents", "undo", "redo", "rewind"}
)  # fmt: skip
VALUE_OPTIONS = frozenset(
    {"--cwd", "--model", "-m", "--base-url", "--approval", "-a", "--sandbox", "--resume", "-r"}
)
PRINT_FLAGS = ("-p", "--print")


@dataclass(frozen=True)
class ParsedArgs:
    """The arguments for the command line proper, and the app's first message when one was given."""

    args: list[str]
    first_message: str | None = None


def split_arguments(args: list[str]) -> ParsedArgs:
    """`[--model x] PROMPT` -> the app with PROMPT sent first; `-p PROMPT` -> `run PROMPT`. Arguments
    after a command (or `--`) are that command's; a first positional naming a command is that command."""
    out: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return ParsedArgs(out + args[index:])
        if arg in PRINT_FLAGS:
            return ParsedArgs([*out, "run", *args[index + 1 :]])
        if arg in VALUE_OPTIONS:
            out += args[index : index + 2]
            index += 2
            continue
        if arg.startswith("-"):
            out.append(arg)
            index += 1
            continue
        if arg in COMMAND_NAMES:
            return ParsedArgs(out + args[index:])
        return ParsedArgs(out + args[index + 1 :], arg)  # the first message; what follows is checked as usual
    return ParsedArgs(out)


class LaunchError(CatbuddyError):
    """A start-up problem the user can fix: its message is printed after `catbuddy: `, then exit ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = code


@dataclass
class GlobalOptions:
    cwd: Path | None = None
    model: str | None = None
    base_url: str | None = None
    approval: str | None = None
    sandbox: str | None = None
    trust_project: bool = False


def warn(message: str) -> None:
    sys.stderr.write(f"catbuddy: warning: {message}\n")


def load_workspace(
    options: GlobalOptions, *, ensure_home: bool = True, warn_untrusted: bool = False
) -> tuple[Workspace, Settings]:
    """Workspace and settings from the options; LaunchError (or ConfigError) if they cannot be had.

    ``trust_project`` trusts the project config's risky settings and records it; otherwise, with
    ``warn_untrusted``, settings it ignores are named in one warning on stderr."""
    from catbuddy.config import load_settings
    from catbuddy.logs import add_log_secrets
    from catbuddy.workspace import Workspace, default_home

    root = options.cwd
    if root is not None and not root.is_dir():
        raise LaunchError(f"--cwd {root}: no such directory", EXIT_USAGE)
    workspace = Workspace.at(root, default_home())
    flags = {"model": options.model, "base_url": options.base_url, "approval": options.approval,
             "sandbox": options.sandbox}  # fmt: skip
    # A ConfigError (exit 2) goes to the front end's one handler of catbuddy's errors, as it is.
    settings = load_settings(
        workspace.home, workspace.work_root, flags=flags, trust_project=options.trust_project
    )
    add_log_secrets(settings.held_secrets())
    if ensure_home:
        try:
            workspace.ensure_home()
        except OSError as exc:
            raise LaunchError(
                f"cannot create {workspace.home}: {exc}. Set CATBUDDY_HOME to a writable folder."
            ) from None
    project = settings.project_trust
    if project is not None and options.trust_project:
        record_trust(workspace, project, trusted=True)
    elif project is None and options.trust_project:  # no risky config yet: trust the work root itself
        record_trust(workspace, _no_risky_settings(workspace), trusted=True)  # (its custom commands)
    elif project is not None and not project.applied and warn_untrusted:
        warn(project.warning())
    return workspace, settings


def _no_risky_settings(workspace: Workspace) -> Any:
    from catbuddy.trust import ProjectTrust, TrustState, digest

    root = workspace.work_root.resolve()
    return ProjectTrust(root, root / ".catbuddy" / "config.toml", {}, digest({}), TrustState.NEW)


def record_trust(workspace: Workspace, project: Any, *, trusted: bool) -> None:
    from catbuddy import trust

    try:
        trust.record(workspace.home, project, trusted)
    except OSError as exc:
        warn(f"cannot save the trust decision in {workspace.home}: {exc}")


def ask_trust_before_start(
    workspace: Workspace, settings: Settings, *, reload: Callable[[], Settings], inline: bool = False
) -> Settings:
    """Before the app starts (and before any MCP server from the project config runs): ask whether to
    trust the project's risky settings, when they are new or changed. A yes records it and reloads."""
    project = settings.project_trust
    if project is None or not project.needs_decision or not sys.stdin.isatty():
        return settings
    from catbuddy.tui.screens.trust import ask_trust

    answer = ask_trust(project, inline=inline)
    if answer is None:  # closed without an answer: ignore them now, ask again next time
        return settings
    record_trust(workspace, project, trusted=answer)
    return reload() if answer else settings


def start_app(
    options: GlobalOptions,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    inline: bool = False,
    first_message: str | None = None,
) -> None:
    """The terminal app, from loading the settings to the line that says how to resume."""
    workspace, settings = load_workspace(options)
    open_app(
        workspace,
        settings,
        options,
        resume=resume,
        continue_latest=continue_latest,
        inline=inline,
        first_message=first_message,
    )


def open_app(
    workspace: Workspace,
    settings: Settings,
    options: GlobalOptions,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    inline: bool = False,
    first_message: str | None = None,
) -> None:
    """The terminal app for settings already loaded from ``options`` (reloaded if the project is trusted)."""
    from catbuddy.logs import log_to_file

    log_to_file(workspace.home, settings.held_secrets())
    settings = ask_trust_before_start(
        workspace, settings, reload=lambda: load_workspace(options)[1], inline=inline
    )
    from catbuddy.tui.app import run_tui

    session_id = run_tui(
        workspace,
        settings,
        resume=resume,
        continue_latest=continue_latest,
        inline=inline,
        first_message=checked_first_message(first_message),
    )
    if session_id:
        sys.stdout.write(f"Resume this session with: catbuddy --resume {session_id}\n")


def checked_first_message(text: str | None) -> str | None:
    """The first message as valid text (argv carries undecodable bytes as lone surrogates); None if blank."""
    if text is None:
        return None
    from catbuddy.text import valid_text

    text = valid_text(text)
    return text if text.strip() else None


def exit_now(code: int) -> None:
    """Exit without the interpreter's teardown, once the session is closed: logs and output flushed."""
    import logging
    import os

    sandbox_launch = sys.modules.get("catbuddy.sandbox.launch")  # loaded only if a command was started
    if sandbox_launch is not None:
        sandbox_launch.remove_private_tmp()  # atexit would have; os._exit skips it
    logging.shutdown()  # flushes the log file
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
