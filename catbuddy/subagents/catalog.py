"""Find subagent definitions and check their frontmatter (docs/architecture.md §5c).

An agent is a Markdown file: YAML frontmatter (``name``, ``description``, ``tools``, ``model``,
``max_turns``) and a body, the agent's instructions. Three roots, in increasing precedence: the shipped
agents (``templates/agents``: ``explore``), the global ``~/.catbuddy/agents`` and the project's
``.catbuddy/agents``; a later root's agent replaces an earlier one of the same name. A broken file is
never fatal: it is skipped and kept as an ``AgentProblem`` for ``catbuddy agents`` to show.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catbuddy.errors import CatbuddyError
from catbuddy.resources import templates_dir
from catbuddy.workspace import Workspace

AGENTS_DIR = "agents"  # under templates/, ~/.catbuddy/ and <work root>/.catbuddy/
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_TURNS_LIMIT = 500
FENCE = "---"
KNOWN_KEYS = frozenset({"name", "description", "tools", "model", "max_turns", "max-turns", "maxTurns"})
SOURCE_SHIPPED = "shipped"
SOURCE_GLOBAL = "global"
SOURCE_PROJECT = "project"


class AgentFileError(CatbuddyError, ValueError):
    """What is wrong with an agent file, phrased so its author knows what to fix."""


@dataclass(frozen=True)
class AgentDefinition:
    name: str
    description: str
    instructions: str  # the file's body
    path: Path
    source: str  # shipped | global | project
    tools: tuple[str, ...] | None = None  # None: the read-only tools
    model: str | None = None  # None: the parent's model
    max_turns: int | None = None  # None: [agents] max_turns


@dataclass(frozen=True)
class AgentProblem:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class AgentCatalog:
    agents: dict[str, AgentDefinition] = field(default_factory=dict)
    problems: list[AgentProblem] = field(default_factory=list)
    hidden: list[AgentDefinition] = field(default_factory=list)  # replaced by a later root's agent

    def names(self) -> list[str]:
        return sorted(self.agents)

    def get(self, name: str) -> AgentDefinition | None:
        return self.agents.get(name)

    def describe_known(self) -> str:
        """``explore (…), reviewer (…)``: what a model is told when it names an unknown agent."""
        return ", ".join(f"{a.name} ({a.description})" for a in (self.agents[n] for n in self.names()))


def agent_roots(workspace: Workspace) -> list[tuple[str, Path]]:
    return [
        (SOURCE_SHIPPED, templates_dir() / AGENTS_DIR),
        (SOURCE_GLOBAL, workspace.home / AGENTS_DIR),
        (SOURCE_PROJECT, workspace.project_dir / AGENTS_DIR),
    ]


def agents_fingerprint(workspace: Workspace) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of every agent file of the user's two roots: changes when any of them does."""
    found: list[tuple[str, int, int]] = []
    for source, root in agent_roots(workspace):
        if source == SOURCE_SHIPPED:
            continue
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name.endswith(".md") and entry.is_file():
                    stat = entry.stat()
                    found.append((entry.path, stat.st_mtime_ns, stat.st_size))
            except OSError:
                continue
    return tuple(found)


def load_agents(workspace: Workspace) -> AgentCatalog:
    """Every agent of the three roots (blocking: a few small files)."""
    catalog = AgentCatalog()
    for source, root in agent_roots(workspace):
        try:
            files = sorted(p for p in root.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            try:
                agent = parse_agent_file(path, source)
            except AgentFileError as exc:
                catalog.problems.append(AgentProblem(path, exc.message))
                continue
            except (OSError, UnicodeDecodeError) as exc:
                catalog.problems.append(AgentProblem(path, f"cannot be read: {exc}"))
                continue
            previous = catalog.agents.get(agent.name)
            if previous is not None:
                catalog.hidden.append(previous)
            catalog.agents[agent.name] = agent
    return catalog


def parse_agent_file(path: Path, source: str) -> AgentDefinition:
    return parse_agent_text(path.read_text(encoding="utf-8"), path, source)


def parse_agent_text(text: str, path: Path, source: str = SOURCE_PROJECT) -> AgentDefinition:
    raw, body = _split(text)
    import yaml  # at the first agent file read: PyYAML costs ~12 ms to import

    try:
        data = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:200]
        raise AgentFileError(f"invalid YAML in the frontmatter: {first}") from None
    if not isinstance(data, dict):
        raise AgentFileError(
            "the frontmatter must be a YAML mapping (name, description, tools, model, max_turns)"
        )
    unknown = sorted(str(k) for k in data if k not in KNOWN_KEYS)
    if unknown:
        raise AgentFileError(
            f"unknown frontmatter key {', '.join(map(repr, unknown))}; the keys are name, description, tools, "
            "model and max_turns"
        )
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or len(name) > MAX_NAME_LENGTH:
        raise AgentFileError(
            f"'name' must be lower-case letters, digits, '-' or '_' (at most {MAX_NAME_LENGTH}), got {name!r}"
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise AgentFileError("'description' is required: one line saying when to use this agent")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise AgentFileError(f"'description' is longer than {MAX_DESCRIPTION_LENGTH} characters")
    if not body.strip():
        raise AgentFileError("the body (the agent's instructions, after the frontmatter) is empty")
    return AgentDefinition(
        name=name,
        description=" ".join(description.split()),
        instructions=body.strip(),
        path=path,
        source=source,
        tools=_tools(data.get("tools")),
        model=_model(data.get("model")),
        max_turns=_max_turns(data.get("max_turns", data.get("max-turns", data.get("maxTurns")))),
    )


def _split(text: str) -> tuple[str, str]:
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        raise AgentFileError("no frontmatter: the file must start with a '---' line")
    for index in range(1, len(lines)):
        if lines[index].strip() == FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise AgentFileError("the frontmatter is not closed by a second '---' line")


def _tools(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [part for part in re.split(r"[,\s]+", value) if part]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise AgentFileError(
            f"'tools' must be a list of tool names (or one comma-separated string), got {value!r}"
        )
    return tuple(dict.fromkeys(v.strip() for v in value))


def _model(value: Any) -> str | None:
    if value is None or value == "inherit":
        return None
    if not isinstance(value, str) or not value.strip():
        raise AgentFileError(f"'model' must be a model name (or 'inherit'), got {value!r}")
    return value.strip()


def _max_turns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURNS_LIMIT:
        raise AgentFileError(f"'max_turns' must be a whole number from 1 to {MAX_TURNS_LIMIT}, got {value!r}")
    return value


def format_agents_table(catalog: AgentCatalog) -> str:
    """`catbuddy agents`: every agent (name, source, tools, model, turn limit, description), then the files
    that could not be used and why. Never raises: a bad file is a line here, not an error."""
    lines = []
    for name in catalog.names():
        agent = catalog.agents[name]
        tools = ", ".join(agent.tools) if agent.tools is not None else "read-only tools"
        limits = [f"model {agent.model}" if agent.model else "parent's model"]
        limits.append(f"max {agent.max_turns} turns" if agent.max_turns else "default turn limit")
        lines.append(f"{name}  [{agent.source}]  {agent.description}")
        lines.append(f"    tools: {tools}; {'; '.join(limits)}; {agent.path}")
    for agent in catalog.hidden:
        lines.append(f"(hidden: {agent.name} from {agent.path}, replaced by a later one)")
    if catalog.problems:
        lines += ["", "Not loaded:"]
        lines += [f"! {problem}" for problem in catalog.problems]
    return "\n".join(lines) if lines else "No agents."
