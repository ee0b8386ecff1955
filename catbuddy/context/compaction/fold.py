"""A compaction's own work around the model call (docs/architecture.md §5): before it, the ledger of
the folded messages merged with the previous one; after it, the pinned summary (the model's prose,
the user's own words, the ledger, the recall note) and the data the ``compaction`` record keeps so
the next compaction merges data, not text. Pure: no I/O, no model, no loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.context.compaction.compactor import CompactionPlan, pinned_summary
from catbuddy.context.compaction.ledger import Ledger, bound_ledger, build_ledger, render_ledger
from catbuddy.context.compaction.plan import Plan, latest_plan
from catbuddy.context.compaction.user_words import UserWords, carry_user_words, load_words
from catbuddy.session.history import WorkingHistory

Count = Callable[[str], int]


@dataclass
class FoldPrep:
    ledger: Ledger
    ledger_text: str
    previous_prose: str | None  # the model's part of the previous summary (what the model folds in)
    previous_summary: str | None  # the whole previous pinned summary (what is replaced)
    previous_words: list[UserWords]
    left_out_before: int
    folded_before: int
    plan: Plan | None = None  # the current plan: pinned verbatim (docs/architecture.md §5c)


@dataclass
class FoldOutcome:
    summary: str  # the pinned summary
    record: dict[str, Any]  # the compaction record's fields besides summary and folded_through
    words: list[UserWords]


def prepare_fold(
    history: WorkingHistory,
    plan: CompactionPlan,
    *,
    work_root: Path | str | None,
    count: Count,
    ledger_tokens: int,
) -> FoldPrep:
    data = history.compaction_data
    ledger = build_ledger(data.get("ledger"), plan.fold, work_root)
    bound_ledger(ledger, ledger_tokens, count)
    prose = data.get("prose")
    return FoldPrep(
        ledger=ledger,
        ledger_text=render_ledger(ledger),
        # A summary written before the ledger existed is all prose.
        previous_prose=prose if isinstance(prose, str) else history.summary,
        previous_summary=history.summary,
        previous_words=load_words(data.get("user_messages")),
        left_out_before=_int(data.get("user_messages_left_out")),
        folded_before=history.folded,
        # The newest plan of the whole working history (the summary's, then the messages'): a plan set in
        # the kept part is pinned too, so snipping that part later cannot lose it.
        plan=latest_plan((entry.meta for entry in history.entries), Plan.from_json(data.get("plan"))),
    )


def finish_fold(
    prep: FoldPrep, plan: CompactionPlan, prose: str, *, count: Count, user_tokens: int
) -> FoldOutcome:
    carried = carry_user_words(
        prep.previous_words,
        plan.fold,
        prose=prose,
        max_tokens=user_tokens,
        count=count,
        left_out_before=prep.left_out_before,
    )
    folded_total = prep.folded_before + len(plan.fold)
    plan_text = prep.plan.render() if prep.plan is not None else ""
    summary = pinned_summary(
        prose, carried.messages, carried.left_out, prep.ledger_text, folded_total, plan_text
    )
    record = {
        "prose": prose,
        "ledger": prep.ledger.to_dict(),
        "user_messages": [words.to_dict() for words in carried.messages],
        "user_messages_left_out": carried.left_out,
        "folded_total": folded_total,
        **({"plan": prep.plan.to_json()} if prep.plan is not None else {}),
    }
    return FoldOutcome(summary, record, carried.messages)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
