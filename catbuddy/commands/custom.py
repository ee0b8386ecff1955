"""Custom slash commands from Markdown files, as Claude Code keeps them:

- `<work root>/.catbuddy/commands/*.md` and `<work root>/.claude/commands/*.md` (the project's),
- `~/.catbuddy/commands/*.md` (the user's, in every project).

The file name is the command (`review.md` is `/review`; `git/commit.md` is `/git:commit`). Optional YAML
frontmatter: `description`, `argument-hint`, `model`, `allowed-tools` (a list or a comma-separated string,
Claude's names like `Read`, `Bash(git diff:*)` stand for the tools of that kind, or catbuddy's own names). The body is the prompt;
`$ARGUMENTS` becomes everything after the name, `$1` … `$9` the words (shell quoting respected). A body
that uses neither gets the arguments appended. A project's command that sets `model` or `allowed-tools`
gets them only in a trusted project (otherwise it runs with neither, and says so). A malformed file is
listed with its problem; it never stops anything.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
MAX_FILE_BYTES = 256 * 1024
POSITIONAL = re.compile(r"\$([1-9])")
# Claude Code's tool names, as the kind of catbuddy tool they stand for ("kind:read" allows every reading
# tool); any other name is taken as a catbuddy tool's own name.
CLAUDE_KINDS = {"read": ToolKind.READ, "grep": ToolKind.READ, "glob": ToolKind.READ, "ls": ToolKind.READ,
                "write": ToolKind.EDIT, "edit": ToolKind.EDIT, "multiedit": ToolKind.EDIT,
                "notebookedit": ToolKind.EDIT, "bash": ToolKind.EXEC, "webfetch": ToolKind.NETWORK,
                "websearch": ToolKind.NETWORK}  # fmt: skip
KIND_PREFIX = "kind:"
PROJECT, USER = "project", "user"


@dataclass(frozen=True)
class CustomCommand:
    name: str  # without the slash
    body: str
    path: Path
    scope: str  # "project" or "user"
    description: str = ""
    argument_hint: str = ""
    model: str | None = None
    allowed_tools: tuple[str, ...] | None = None  # tool names and "kind:<ToolKind>"; None: every tool

    @property
    def changes_settings(self) -> bool:
        return self.model is not None or self.allowed_tools is not None


@dataclass(frozen=True)
class CommandProblem:
    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass
class CommandCatalog:
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    problems: list[CommandProblem] = field(default_factory=list)

    def find(self, name: str) -> CustomCommand | None:
        return self.commands.get(name) or self.commands.get(name.lower())


@dataclass(frozen=True)
class Invocation:
    """A custom command applied to its arguments: the prompt to send and what it asks of the turn."""

    command: CustomCommand
    prompt: str
    model: str | None
    allowed_tools: tuple[str, ...] | None
    notice: str = ""  # e.g. the model and tools it could not have in an untrusted project


def command_folders(work_root: Path, home: Path) -> list[tuple[Path, str]]:
    """Where commands come from, the first found of a name winning: project, then .claude, then user."""
    return [
        (work_root / ".catbuddy" / "commands", PROJECT),
        (work_root / ".claude" / "commands", PROJECT),
        (home / "commands", USER),
    ]


def discover(work_root: Path, home: Path, reserved: frozenset[str] = frozenset()) -> CommandCatalog:
    """Every command file of the three folders; ``reserved`` (the built-in commands) cannot be replaced."""
    catalog = CommandCatalog()
    for folder, scope in command_folders(work_root, home):
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            name = ":".join(path.relative_to(folder).with_suffix("").parts)
            try:
                command = parse_command(path, name, scope)
            except ValueError as exc:
                catalog.problems.append(CommandProblem(path, str(exc)))
                continue
            if name.lower() in reserved:
                catalog.problems.append(
                    CommandProblem(path, f"/{name} is a built-in command; rename the file")
                )
            elif name not in catalog.commands:
                catalog.commands[name] = command
    return catalog


def parse_command(path: Path, name: str, scope: str) -> CustomCommand:
    """One command file, or ValueError saying what is wrong with it."""
    if not all(NAME_PATTERN.match(part) for part in name.split(":")):
        raise ValueError(f"{name!r} cannot be a command name (letters, digits, -, _ and . only)")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES // 1024} KB")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot be read: {exc.strerror or exc}") from None
    data, body = _frontmatter(text)
    description = _text(data, "description")
    hint = _text(data, "argument-hint")
    model = _text(data, "model") or None
    tools = _tools(data.get("allowed-tools")) if "allowed-tools" in data else None
    unknown = sorted(
        set(data) - {"description", "argument-hint", "model", "allowed-tools", "disable-model-invocation"}
    )
    if unknown:
        raise ValueError(f"unknown frontmatter key(s): {', '.join(unknown)} (known: description, argument-hint, "
                         "model, allowed-tools)")  # fmt: skip
    if not body.strip():
        raise ValueError("the prompt (the text after the frontmatter) is empty")
    first_line = body.strip().splitlines()[0].strip()
    return CustomCommand(name, body.strip(), path, scope, description or first_line[:80], hint, model, tools)


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines(keepends=True)
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            import yaml  # the first command with frontmatter pays for PyYAML

            raw = "".join(lines[1:index])
            try:
                data = yaml.safe_load(raw) or {}
            except yaml.YAMLError as exc:
                # Claude Code reads `argument-hint: [file] [focus]` (not YAML) as plain text: so do we.
                data = _plain_lines(raw)
                if data is None:
                    mark = getattr(exc, "problem_mark", None)
                    where = f" (line {mark.line + 2})" if mark is not None else ""
                    raise ValueError(f"the frontmatter is not valid YAML{where}") from None
            if not isinstance(data, dict):
                raise ValueError("the frontmatter must be key: value lines")
            return data, "".join(lines[index + 1 :])
    raise ValueError("the frontmatter is not closed by a second '---' line")


def _plain_lines(raw: str) -> dict[str, Any] | None:
    """`key: value` lines read as text, when every line is one (else None)."""
    data: dict[str, Any] = {}
    for line in raw.splitlines():
        if not line.strip():
            continue
        key, colon, value = line.partition(":")
        if not colon or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key.strip()):
            return None
        data[key.strip()] = value.strip()
    return data


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if key == "argument-hint" and isinstance(value, list):  # `[file]` parsed as a YAML list
        return " ".join(f"[{item}]" for item in value)
    if not isinstance(value, str | int | float):
        raise ValueError(f"`{key}` must be text, not {type(value).__name__}")
    return str(value).strip()


def _tools(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [item.strip() for item in re.split(r",(?![^(]*\))", value) if item.strip()]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = [item.strip() for item in value]
    else:
        raise ValueError("`allowed-tools` must be a list of tool names or a comma-separated string")
    names: list[str] = []
    for item in items:
        base = item.split("(", 1)[0].strip()
        kind = CLAUDE_KINDS.get(base.lower())
        name = f"{KIND_PREFIX}{kind.value}" if kind is not None else base
        if name not in names:
            names.append(name)
    return tuple(names)


def allows(allowed: tuple[str, ...], name: str, kind: ToolKind) -> bool:
    """Whether a command's ``allowed-tools`` let a tool of this name and kind be offered."""
    return name in allowed or f"{KIND_PREFIX}{kind.value}" in allowed


def expand(command: CustomCommand, arguments: str) -> str:
    """The prompt: `$ARGUMENTS` and `$1`…`$9` filled in (arguments appended when the body uses neither)."""
    arguments = arguments.strip()
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words
        words = arguments.split()
    body = command.body
    uses = "$ARGUMENTS" in body or POSITIONAL.search(body) is not None
    body = body.replace("$ARGUMENTS", arguments)
    body = POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", body)
    if not uses and arguments:
        body += f"\n\nARGUMENTS: {arguments}"
    return body


def invocation(catalog: CommandCatalog, text: str, *, project_trusted: bool) -> Invocation | None:
    """``/name args`` as a custom command, or None when it names none."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "\n" in head:
        head, _, more = head.partition("\n")
        rest = more + (" " + rest if rest else "")
    command = catalog.find(head)
    if command is None:
        return None
    prompt = expand(command, rest)
    if command.scope == PROJECT and command.changes_settings and not project_trusted:
        notice = (
            f"/{command.name} asks for {_asks(command)}, which a project's command gets only in a trusted "
            "project; it runs with the session's model and tools. Trust the project with --trust-project."
        )
        return Invocation(command, prompt, None, None, notice)
    return Invocation(command, prompt, command.model, command.allowed_tools)


def _asks(command: CustomCommand) -> str:
    asks = []
    if command.model is not None:
        asks.append(f"model {command.model}")
    if command.allowed_tools is not None:
        asks.append(f"only the tools {', '.join(command.allowed_tools)}".replace(KIND_PREFIX, "any "))
    return " and ".join(asks)
