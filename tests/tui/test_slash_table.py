from __future__ import annotations

from catbuddy.tui.widgets import slash_table


def test_parse_splits_name_and_argument() -> None:
    parsed = slash_table.parse("/compact keep the API notes ")
    assert parsed == slash_table.ParsedCommand("compact", "keep the API notes")


def test_paths_and_plain_text_are_not_commands() -> None:
    assert slash_table.parse("/usr/bin/env is odd") is None
    assert slash_table.parse("//comment") is None
    assert slash_table.parse("hello /help") is None


def test_completion_lists_matching_commands_with_descriptions() -> None:
    names = [command.name for command in slash_table.complete("/co")]
    assert names == ["compact", "context", "copy"]
    assert all(command.description for command in slash_table.complete("/"))


def test_unknown_command_suggests_the_closest() -> None:
    assert "Did you mean /compact?" in slash_table.unknown_message("compcat")
    assert "/help" in slash_table.unknown_message("zzzzzz")


def test_editable_names_are_case_and_suffix_insensitive() -> None:
    assert slash_table.resolve_editable("soul") == "SOUL.md"
    assert slash_table.resolve_editable("memory.MD") == "MEMORY.md"
    assert slash_table.resolve_editable("secrets.txt") is None
