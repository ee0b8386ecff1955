"""Subagent definitions (docs/architecture.md §5c): frontmatter checked, roots in precedence, and a bad
file reported, never fatal."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.subagents.catalog import AgentFileError, format_agents_table, load_agents, parse_agent_text
from catbuddy.workspace import Workspace

# The shape of a Claude Code subagent file (name, description, tools as a comma-separated string, model),
# as its documentation shows them; catbuddy reads the same keys.
CLAUDE_STYLE = """---
name: code-reviewer
description: Expert code review specialist. Use after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: inherit
---
You are a senior code reviewer ensuring high standards of code quality.
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_explore_agent_is_read_only_and_has_instructions(workspace: Workspace) -> None:
    explore = load_agents(workspace).get("explore")
    assert explore is not None and explore.source == "shipped"
    assert explore.tools is None and explore.model is None  # the read-only tools, the parent's model
    assert "path:line" in explore.instructions


def test_frontmatter_keys_are_read() -> None:
    agent = parse_agent_text(CLAUDE_STYLE, Path("code-reviewer.md"))
    assert agent.name == "code-reviewer" and agent.tools == ("Read", "Grep", "Glob", "Bash")
    assert agent.model is None  # "inherit"
    assert agent.instructions.startswith("You are a senior code reviewer")
    listed = parse_agent_text(
        "---\ndescription: d\ntools: [grep, read_file]\nmax_turns: 7\n---\nbody\n", Path("x.md")
    )
    assert listed.name == "x" and listed.tools == ("grep", "read_file") and listed.max_turns == 7


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no frontmatter here\n", "no frontmatter"),
        ("---\nname: a\n", "not closed"),
        ("---\nname: a\ndescription: [unclosed\n---\nb\n", "invalid YAML"),
        ("---\nname: a\n---\nbody\n", "'description' is required"),
        ("---\nname: A B\ndescription: d\n---\nbody\n", "'name' must be lower-case"),
        ("---\ndescription: d\nmax_turns: 0\n---\nbody\n", "'max_turns' must be a whole number"),
        ("---\ndescription: d\ntools: 5\n---\nbody\n", "'tools' must be a list"),
        ("---\ndescription: d\ncolour: blue\n---\nbody\n", "unknown frontmatter key 'colour'"),
        ("---\ndescription: d\n---\n\n", "the body"),
    ],
)
def test_a_bad_file_says_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(AgentFileError, match=problem):
        parse_agent_text(text, Path("a.md"))


def test_project_beats_global_beats_shipped_and_bad_files_are_listed(workspace: Workspace) -> None:
    write(
        workspace.home / "agents",
        "explore.md",
        "---\nname: explore\ndescription: mine\n---\nGlobal explore.\n",
    )
    write(
        workspace.project_dir / "agents",
        "explore.md",
        "---\nname: explore\ndescription: project's\n---\nP.\n",
    )
    write(workspace.project_dir / "agents", "broken.md", "---\nname: broken\n---\nbody\n")

    catalog = load_agents(workspace)

    assert catalog.get("explore").description == "project's"  # type: ignore[union-attr]
    assert [a.source for a in catalog.hidden] == ["shipped", "global"]
    assert [p.path.name for p in catalog.problems] == ["broken.md"]
    table = format_agents_table(catalog)
    assert "explore  [project]  project's" in table and "! " in table and "broken.md" in table
