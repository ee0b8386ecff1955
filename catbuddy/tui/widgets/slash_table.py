"""Slash commands: the table the completer shows and the parser the app dispatches on.

Kept free of Textual so the parsing and suggestions are testable on their own.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from catbuddy.workspace import WORKSPACE_FILES


@dataclass(frozen=True)
class SlashCommand:
    name: str  # without the slash
    description: str
    usage: str = ""  # argument hint shown in /help and the completer


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Show commands and keys"),
    SlashCommand("stop", "Stop the running turn (same as Esc)"),
    SlashCommand("new", "Start a fresh session"),
    SlashCommand("clear", "Start a fresh session (same as /new)"),
    SlashCommand(
        "compact", "Summarise older messages now (undo: bring the last fold back)", "[instructions] | undo"
    ),
    SlashCommand("context", "Token use per layer, history and budget"),
    SlashCommand("memory", "Edit both MEMORY.md files, or review their changes", "[log|diff [N]|undo]"),
    SlashCommand("dream", "Distil pending memory entries into MEMORY.md now", "[--dry-run]"),
    SlashCommand("edit", "Edit a workspace file in the app", "AGENTS.md|SOUL.md|USER.md|TOOLS.md|MEMORY.md"),
    SlashCommand("undo", "Take back the file changes of this session's latest turn (again: the one before)"),
    SlashCommand("redo", "Put back what the latest /undo took back"),
    SlashCommand(
        "rewind", "Go back to before an earlier message: conversation, files or both", "[message id]"
    ),
    SlashCommand("fork", "Start a new session with this one's history (up to a message)", "[message id]"),
    SlashCommand("sessions", "Find and resume a session of this project"),
    SlashCommand("resume", "Resume a session (picker, or by id)", "[id]"),
    SlashCommand("model", "Switch the model (no name: pick from the endpoint's list)", "[name]"),
    SlashCommand("approval", "Switch the approval mode", "[ask|auto-edit|yolo]"),
    SlashCommand("plan", "Plan mode: only reading tools, the model ends with a plan (Shift+Tab)", "[on|off|accept]"),
    SlashCommand("copy", "Copy the last reply to the clipboard"),
    SlashCommand("exit", "Quit (prints the resume command)"),
)
BY_NAME = {command.name: command for command in COMMANDS}
# Custom commands (.catbuddy/commands/*.md …), set by the app when it starts (tui/slash.py).
CUSTOM: dict[str, SlashCommand] = {}


def set_custom(commands: list[SlashCommand]) -> None:
    CUSTOM.clear()
    CUSTOM.update(
        {command.name.lower(): command for command in commands if command.name.lower() not in BY_NAME}
    )


def lookup(name: str) -> SlashCommand | None:
    return BY_NAME.get(name) or CUSTOM.get(name)


EDITABLE_FILES = WORKSPACE_FILES


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    argument: str


def parse(text: str) -> ParsedCommand | None:
    """`/compact keep the API notes` -> ParsedCommand("compact", "keep the API notes"); None if not a command.

    A line starting with two slashes or a path like `/usr/bin` followed by more path is a message, not a command.
    """
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    if not head or "/" in head:
        return None
    return ParsedCommand(head.lower(), rest.strip())


def is_full_command(text: str) -> bool:
    """`/context` (one known command name, nothing else): Enter runs it, whatever the list shows."""
    parsed = parse(text)
    return (
        parsed is not None
        and not parsed.argument
        and "\n" not in text.strip()
        and (parsed.name in BY_NAME or parsed.name in CUSTOM)
    )


def complete(prefix: str) -> list[SlashCommand]:
    """Commands whose name starts with what was typed after the slash (all of them for a bare `/`)."""
    word = prefix.lstrip("/").lower()
    return [command for command in (*COMMANDS, *CUSTOM.values()) if command.name.lower().startswith(word)]


def closest(name: str) -> str | None:
    matches = difflib.get_close_matches(name, [*BY_NAME, *CUSTOM], n=1, cutoff=0.5)
    if matches:
        return matches[0]
    starts = [command for command in BY_NAME if command.startswith(name[:2])] if name else []
    return starts[0] if starts else None


def unknown_message(name: str) -> str:
    suggestion = closest(name)
    text = f"Unknown command /{name}."
    if suggestion:
        text += f" Did you mean /{suggestion}?"
    return text + " Type /help for the list."


def resolve_editable(argument: str) -> str | None:
    """`soul`, `SOUL.md` and `soul.md` all name SOUL.md; None when it is not an editable file."""
    wanted = argument.strip().upper()
    if not wanted:
        return None
    if not wanted.endswith(".MD"):
        wanted += ".MD"
    for name in EDITABLE_FILES:
        if name.upper() == wanted:
            return name
    return None
