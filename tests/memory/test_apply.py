"""Validating and applying operations to one memory file: the rules are code, not prompt."""

from __future__ import annotations

from pathlib import Path

from catbuddy.memory.apply import Limits, check_file
from catbuddy.memory.operations import ADD, DELETE, UPDATE, Operation
from catbuddy.workspace import shipped_default

LIMITS = Limits(max_lines=200, max_bytes=25 * 1024)
PATH = Path("/tmp/MEMORY.md")
SIX = "# Memory\n\n" + "".join(f"- fact {n}\n" for n in range(1, 7))


def check(before: str | None, *ops: Operation, limits: Limits = LIMITS, secrets: tuple[str, ...] = ()):
    return check_file("project", PATH, before, list(ops), limits, secrets)


def test_add_update_and_delete_change_the_named_lines_and_nothing_else() -> None:
    result = check(
        SIX, Operation(UPDATE, 2, "fact two, refined"), Operation(DELETE, 5), Operation(ADD, 0, "new")
    )
    assert not result.problems
    assert result.plan.after == (
        "# Memory\n\n- fact 1\n- fact two, refined\n- fact 3\n- fact 4\n- fact 6\n- new\n"
    )
    assert (result.plan.added, result.plan.updated, result.plan.deleted) == (1, 1, 1)
    assert result.plan.changed


def test_a_missing_file_or_the_shipped_template_starts_a_fresh_memory() -> None:
    for before in (None, shipped_default("MEMORY.md")):
        result = check(before, Operation(ADD, 0, "Uses pnpm"))
        assert result.plan.after == "# Memory\n\n- Uses pnpm\n"


def test_duplicates_of_existing_lines_and_of_each_other_are_skipped() -> None:
    result = check(
        "- Prefers pnpm.\n",
        Operation(ADD, 0, "prefers   PNPM"),
        Operation(ADD, 0, "Runs tests with tox"),
        Operation(ADD, 0, "runs tests with tox."),
    )
    assert not result.problems
    assert result.plan.after == "- Prefers pnpm.\n- Runs tests with tox\n"
    assert result.plan.added == 1 and len(result.plan.skipped) == 2


def test_an_update_to_the_same_text_or_to_a_duplicate_is_skipped() -> None:
    result = check("- a\n- b\n", Operation(UPDATE, 1, "A"), Operation(UPDATE, 2, "a"))
    assert not result.problems and not result.plan.changed
    assert result.plan.skipped == [
        "UPDATE 1: the text is unchanged",
        "UPDATE 2: it would duplicate another line",
    ]


def test_only_answers_that_change_nothing_leave_the_file_unchanged() -> None:
    assert not check(SIX).plan.changed
    assert not check(SIX, Operation(ADD, 0, "fact 3")).plan.changed


def test_numbers_that_do_not_exist_are_a_problem_with_the_range() -> None:
    result = check(SIX, Operation(UPDATE, 9, "x"), Operation(DELETE, 0))
    assert (
        "UPDATE 9 in `## Project Context`: there is no [9] (its numbered lines are [1]–[6])"
        in result.problems
    )
    assert any("DELETE 0" in p for p in result.problems)
    assert "there is no [1] (it has no numbered lines)" in check(None, Operation(DELETE, 1)).problems[0]


def test_a_number_named_twice_is_a_problem() -> None:
    result = check(SIX, Operation(UPDATE, 2, "x"), Operation(DELETE, 2))
    assert "[2] in `## Project Context` is named twice (UPDATE and DELETE)" in result.problems


def test_no_run_deletes_more_than_a_third_of_the_lines() -> None:
    assert not check(SIX, Operation(DELETE, 1), Operation(DELETE, 2)).problems
    result = check(SIX, *(Operation(DELETE, n) for n in range(1, 7)))
    assert "deletes 6 of its 6 numbered lines; a run may delete at most 2 (a third)" in result.problems[0]
    assert result.plan.after == SIX  # nothing computed from a refused answer


def test_a_fact_holding_a_secret_is_refused_and_the_reason_does_not_repeat_it() -> None:
    key = "sk-proj-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
    for text in (
        f"The API key is {key}",
        "The staging password is hunter2!",
        "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwx",
    ):
        result = check(SIX, Operation(ADD, 0, text))
        assert result.problems and "never stored in memory" in result.problems[0], text
        assert key not in result.problems[0] and "hunter2" not in result.problems[0]
    configured = check(
        SIX, Operation(UPDATE, 1, "key: my-own-secret-value"), secrets=("my-own-secret-value",)
    )
    assert "the configured API key" in configured.problems[0]


def test_an_answer_that_would_exceed_the_caps_is_refused_so_it_can_be_merged() -> None:
    small = Limits(max_lines=9, max_bytes=25 * 1024)  # SIX is 8 lines: title, blank line, six facts
    assert not check(SIX, Operation(ADD, 0, "seven"), limits=small).problems
    result = check(SIX, Operation(ADD, 0, "seven"), Operation(ADD, 0, "eight"), limits=small)
    assert (
        result.over_caps and "10 lines" in result.problems[0] and "Merge related facts" in result.problems[0]
    )
    tiny = Limits(max_lines=200, max_bytes=80)
    assert check(SIX, Operation(ADD, 0, "x" * 40), limits=tiny).over_caps


def test_a_file_already_over_the_caps_may_shrink_but_not_grow() -> None:
    big = "".join(f"- fact {n}\n" for n in range(30))
    small = Limits(max_lines=10, max_bytes=25 * 1024)
    assert not check(big, Operation(UPDATE, 1, "merged"), Operation(DELETE, 2), limits=small).problems
    assert check(big, Operation(ADD, 0, "more"), limits=small).over_caps


def test_new_facts_go_under_a_learned_heading_in_a_file_organised_by_headings() -> None:
    before = "# Memory\n\n## Testing\n- pytest -q\n\n## Style\n- tabs\n"
    first = check(before, Operation(ADD, 0, "uses ruff")).plan.after
    assert first.endswith("## Style\n- tabs\n\n## Learned\n\n- uses ruff\n")
    second = check(first, Operation(ADD, 0, "uses mypy")).plan.after
    assert second.endswith("## Learned\n\n- uses ruff\n- uses mypy\n")
