"""Parsing a Dream answer: two sections of operations, and every shape problem said in words."""

from __future__ import annotations

from dream_helpers import answer

from catbuddy.memory.operations import ADD, DELETE, NONE, UPDATE, Operation, parse_answer


def test_a_valid_answer_gives_the_operations_of_each_section() -> None:
    parsed = parse_answer(answer(["ADD: Prefers pnpm", "UPDATE 2: Uses Python 3.12"], ["DELETE 1", "NONE"]))
    assert parsed.ok, parsed.problems
    assert parsed.changes("global") == [
        Operation(ADD, 0, "Prefers pnpm"),
        Operation(UPDATE, 2, "Uses Python 3.12"),
    ]
    assert parsed.changes("project") == [Operation(DELETE, 1)]
    assert parsed.sections["project"][-1].kind == NONE


def test_keywords_are_case_insensitive_and_brackets_around_numbers_are_accepted() -> None:
    parsed = parse_answer("## user profile\n* add: x\n## Project Context:\n- update [3]: y\n- delete [4]\n")
    assert parsed.ok, parsed.problems
    assert parsed.changes("project") == [Operation(UPDATE, 3, "y"), Operation(DELETE, 4)]


def test_an_answer_wrapped_in_a_code_fence_is_read_as_if_it_were_not() -> None:
    parsed = parse_answer("```markdown\n" + answer("ADD: x") + "```\n")
    assert parsed.ok, parsed.problems


def test_prose_is_rejected_with_the_reason() -> None:
    parsed = parse_answer("Sure! The user seems to like pnpm, so I would add that.")
    assert not parsed.ok
    reason = "; ".join(parsed.problems)
    assert "text outside the two sections" in reason
    assert "`## User Profile` is missing" in reason and "`## Project Context` is missing" in reason


def test_a_line_that_is_not_an_operation_is_named() -> None:
    parsed = parse_answer(answer(["ADD: x", "REMEMBER that the user likes tea"]))
    assert not parsed.ok
    assert "'- REMEMBER that the user likes tea' is not an operation" in parsed.problems[0]


def test_an_empty_section_and_an_add_without_text_are_problems() -> None:
    assert "empty: write `- NONE`" in "; ".join(
        parse_answer("## User Profile\n\n## Project Context\n- NONE\n").problems
    )
    assert "has no text after the colon" in "; ".join(parse_answer(answer("ADD:")).problems)


def test_unknown_and_repeated_sections_are_problems() -> None:
    text = answer() + "\n## Project Context\n- NONE\n## Thoughts\n- NONE\n"
    reason = "; ".join(parse_answer(text).problems)
    assert "appears twice" in reason and "unknown section '## Thoughts'" in reason


def test_a_reasoning_models_thinking_block_is_ignored() -> None:
    parsed = parse_answer("<think>The user said tea. I should ADD it.</think>\n" + answer("ADD: Likes tea"))
    assert parsed.ok, parsed.problems
    assert parsed.changes("global") == [Operation(ADD, 0, "Likes tea")]
