"""The plan as data (context/compaction/plan.py): what models send, what is refused, the one rendering."""

from __future__ import annotations

import pytest

from catbuddy.context.compaction.plan import Plan, PlanError, PlanStep, StepStatus, latest_plan, parse_plan


def test_aliases_and_plain_strings_are_read() -> None:
    plan = parse_plan(
        {
            "todos": [
                "first",
                {"content": "second", "status": "Completed"},
                {"title": "third", "status": "in-progress"},
                {"step": "fourth", "status": "cancelled"},
            ]
        },  # fmt: skip
        max_steps=10,
    )
    assert [s.status for s in plan.steps] == [StepStatus.PENDING, StepStatus.DONE, StepStatus.IN_PROGRESS,
                                              StepStatus.CANCELLED]  # fmt: skip
    assert plan.progress() == "2/4 done" and plan.current == PlanStep("third", StepStatus.IN_PROGRESS)
    assert plan.render() == "Plan (2/4 done):\n1. [ ] first\n2. [x] second\n3. [>] third\n4. [-] fourth"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"plan": "do it"}, "must be a list"),
        ({"plan": [{"status": "pending"}]}, "step 1 has no text"),
        ({"plan": [{"step": "   ", "status": "pending"}]}, "step 1 is empty"),
        ({"plan": [{"step": "x" * 500, "status": "pending"}]}, "keep each step under"),
        ({"plan": [3]}, "step 1 must be an object"),
        ({"plan": [], "explanation": 5}, "`explanation` must be a string"),
    ],
)
def test_malformed_plans_name_the_problem(args: dict, problem: str) -> None:
    with pytest.raises(PlanError, match=problem):
        parse_plan(args, max_steps=10)


def test_an_empty_list_clears_the_plan() -> None:
    assert parse_plan({"plan": []}, max_steps=3).render() == "Plan: (cleared)"


def test_the_stored_form_round_trips_and_damaged_records_are_skipped() -> None:
    plan = Plan((PlanStep("a", StepStatus.DONE),), "why")
    assert Plan.from_json(plan.to_json()) == plan
    assert Plan.from_json({"steps": [{"step": "a", "status": "exploded"}]}) is None
    metas = [{"status": "ok", "extra": {"plan": plan.to_json()}}, {"status": "error", "extra": {"plan": {"steps": []}}},
             {"status": "ok", "extra": {"plan": "garbage"}}, None]  # fmt: skip
    assert latest_plan(metas) == plan  # a failed call's plan never counts
