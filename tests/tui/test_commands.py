from __future__ import annotations

from catbuddy.tui import commands


def test_parse_splits_name_and_argument() -> None:
    parsed = commands.parse("/compact keep the API notes ")
    assert parsed == commands.ParsedCommand("compact", "keep the API notes")


def test_paths_and_plain_text_are_not_commands() -> None:
    assert commands.parse("/usr/bin/env is odd") is None
    assert commands.parse("//comment") is None
    assert commands.parse("hello /help") is None


def test_completion_lists_matching_commands_with_descriptions() -> None:
    names = [command.name for command in commands.complete("/co")]
    assert names == ["compact", "context", "copy"]
    assert all(command.description for command in commands.complete("/"))


def test_unknown_command_suggests_the_closest() -> None:
    assert "Did you mean /compact?" in commands.unknown_message("compcat")
    assert "/help" in commands.unknown_message("zzzzzz")


def test_editable_names_are_case_and_suffix_insensitive() -> None:
    assert commands.resolve_editable("soul") == "SOUL.md"
    assert commands.resolve_editable("memory.MD") == "MEMORY.md"
    assert commands.resolve_editable("secrets.txt") is None
