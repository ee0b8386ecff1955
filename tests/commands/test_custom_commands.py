"""Custom commands: Markdown files become slash commands with their frontmatter, arguments fill the body,
a malformed file is listed with its problem, and a project's command changes model or tools only in a
trusted project."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.commands.custom import discover, expand, invocation

# The shape of Claude Code's documented example (docs.anthropic.com, "Slash commands": a
# `.claude/commands/review-pr.md` with allowed-tools, argument-hint, description and $ARGUMENTS / $1).
REVIEW = """---
allowed-tools: Bash(git diff:*), Read, Grep
argument-hint: [file] [focus]
description: Review a file for bugs
model: gpt-4o
---
Review $1 with a focus on $2.

All arguments: $ARGUMENTS
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return root, home


def test_frontmatter_and_body_make_the_command(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "review.md", REVIEW)

    command = discover(root, home).commands["review"]

    assert command.description == "Review a file for bugs"
    assert command.argument_hint == "[file] [focus]"
    assert command.model == "gpt-4o"
    assert command.allowed_tools == ("kind:exec", "kind:read")  # Claude's names: the tools of that kind


def test_arguments_fill_dollar_arguments_and_positions(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "review.md", REVIEW)
    command = discover(root, home).commands["review"]

    prompt = expand(command, 'calc.py "error handling"')

    assert prompt.startswith("Review calc.py with a focus on error handling.")
    assert prompt.endswith('All arguments: calc.py "error handling"')


def test_a_body_without_placeholders_gets_the_arguments_appended(places) -> None:
    root, home = places
    write(home / "commands", "explain.md", "Explain this code simply.\n")

    command = discover(root, home).commands["explain"]

    assert command.scope == "user" and command.description == "Explain this code simply."
    assert expand(command, "calc.py") == "Explain this code simply.\n\nARGUMENTS: calc.py"


def test_claude_commands_are_read_and_subfolders_namespace(places) -> None:
    root, home = places
    write(root / ".claude" / "commands" / "git", "commit.md", "Write a commit message for $ARGUMENTS\n")

    assert "git:commit" in discover(root, home).commands


def test_the_project_command_wins_over_the_user_one(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "fix.md", "project fix\n")
    write(home / "commands", "fix.md", "user fix\n")

    assert discover(root, home).commands["fix"].body == "project fix"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\ndescription: [unclosed\n  - nested: {\n---\nbody\n", "not valid YAML"),
        ("---\ndescription: x\nbody without a closing fence\n", "not closed"),
        ("---\ndescription: x\nmodle: gpt-4o\n---\nbody\n", "unknown frontmatter key(s): modle"),
        ("---\nallowed-tools: 3\n---\nbody\n", "`allowed-tools` must be a list"),
        ("---\ndescription: only frontmatter\n---\n", "is empty"),
    ],
)
def test_a_malformed_file_is_listed_with_its_problem(places, text: str, problem: str) -> None:
    root, home = places
    path = write(root / ".catbuddy" / "commands", "broken.md", text)
    write(root / ".catbuddy" / "commands", "fine.md", "fine\n")

    catalog = discover(root, home)

    assert "fine" in catalog.commands and "broken" not in catalog.commands
    (found,) = catalog.problems
    assert found.path == path and problem in found.problem


def test_a_file_named_like_a_built_in_command_is_a_problem(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "help.md", "my help\n")

    catalog = discover(root, home, frozenset({"help"}))

    assert "help" not in catalog.commands and "built-in" in catalog.problems[0].problem


def test_an_untrusted_project_command_runs_without_its_model_and_tools(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "review.md", REVIEW)
    catalog = discover(root, home)

    untrusted = invocation(catalog, "/review calc.py", project_trusted=False)
    trusted = invocation(catalog, "/review calc.py", project_trusted=True)

    assert untrusted is not None and untrusted.model is None and untrusted.allowed_tools is None
    assert "trusted project" in untrusted.notice
    assert (
        trusted is not None
        and trusted.model == "gpt-4o"
        and trusted.allowed_tools == ("kind:exec", "kind:read")
    )


def test_a_user_command_needs_no_trust(places) -> None:
    root, home = places
    write(home / "commands", "quick.md", "---\nmodel: gpt-4o-mini\n---\nBe quick: $ARGUMENTS\n")

    found = invocation(discover(root, home), "/quick now", project_trusted=False)

    assert found is not None and found.model == "gpt-4o-mini" and found.prompt == "Be quick: now"


def test_text_that_names_no_command_is_no_invocation(places) -> None:
    root, home = places
    write(root / ".catbuddy" / "commands", "review.md", REVIEW)
    catalog = discover(root, home)

    assert invocation(catalog, "/usr/bin/env python", project_trusted=True) is None
    assert invocation(catalog, "please /review", project_trusted=True) is None
