"""A session's plan and its subagent calls as data and text (docs/architecture.md §5c): the current plan,
how many versions `update_plan` set, and per `task` call the tokens the child's requests carried against
the tokens it handed back. `catbuddy context --session`, `catbuddy sessions show` and the app's /context
show it; ``format_transcript`` is how a child's transcript reads under its call (the app, `sessions show`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from catbuddy.context.compaction.plan import latest_plan, plan_of
from catbuddy.messages import content_text, strip_runtime_block
from catbuddy.session.records import EventRecord, MessageRecord, Record
from catbuddy.session.usage import SUBAGENT_KIND

TRANSCRIPT_LINE_CHARS = 200


def plan_and_delegation(records: Iterable[Record], *, transcripts: bool = False) -> dict[str, Any]:
    """``{"plan": {...} | None, "plan_versions": n, "subagents": [...]}`` from a session's records."""
    records = list(records)
    metas = [r.meta for r in records if isinstance(r, MessageRecord)]
    plan = latest_plan(metas)
    subagents = []
    for record in records:
        if isinstance(record, EventRecord) and record.kind == SUBAGENT_KIND:
            subagents.append(subagent_row(record.data, transcripts=transcripts))
    return {
        "plan": plan.to_json() if plan is not None else None,
        "plan_text": plan.render() if plan is not None else "",
        "plan_versions": sum(1 for meta in metas if plan_of(meta) is not None),
        "subagents": subagents,
    }


def subagent_row(data: Mapping[str, Any], *, transcripts: bool = False) -> dict[str, Any]:
    row = {
        key: data.get(key)
        for key in (
            "call_id",
            "agent",
            "description",
            "session",
            "status",
            "reason",
            "turns",
            "spent_tokens",
            "returned_tokens",
        )  # fmt: skip
    }
    if transcripts:
        row["answer"] = data.get("answer", "")
        row["transcript"] = list(data.get("transcript") or [])
    return row


def format_delegation(data: Mapping[str, Any], *, transcripts: bool = False) -> list[str]:
    """The plan and the subagent calls as text lines (nothing when the session has neither)."""
    lines: list[str] = []
    if data.get("plan_text"):
        versions = data.get("plan_versions", 0)
        lines += [
            "",
            f"=== Plan (set {versions} time{'s' if versions != 1 else ''}; recall finds earlier ones) ===",
        ]
        lines.append(str(data["plan_text"]))
    rows = data.get("subagents") or []
    if rows:
        spent = sum(int(r.get("spent_tokens") or 0) for r in rows)
        returned = sum(int(r.get("returned_tokens") or 0) for r in rows)
        lines += [
            "",
            f"=== Subagent calls ({len(rows)}: {spent:,} tokens read by them, {returned:,} returned) ===",
        ]
        for row in rows:
            reason = f" ({row['reason']})" if row.get("reason") else ""
            lines.append(
                f"- {row.get('call_id')} {row.get('agent')}: {row.get('description') or '-'} · {row.get('status')}"
                f"{reason} · {row.get('turns') or 0} calls · spent {int(row.get('spent_tokens') or 0):,} → "
                f"returned {int(row.get('returned_tokens') or 0):,} tokens · session {row.get('session')}"
            )
            if transcripts:
                lines += ["    " + line for line in format_transcript(row.get("transcript") or [])]
    return lines


def format_transcript(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """A child's transcript, one line a message (long ones cut), for `sessions show` and the app."""
    lines = []
    for message in messages:
        role = str(message.get("role", "?"))
        text = content_text(message.get("content"))
        text = " ".join((strip_runtime_block(text) if role == "user" else text).split())
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            names = ", ".join(
                f"{c.get('function', {}).get('name')}({c.get('function', {}).get('arguments', '')})"
                for c in calls
                if isinstance(c, Mapping)
            )
            text = (text + " " if text else "") + f"→ {names}"
        if len(text) > TRANSCRIPT_LINE_CHARS:
            text = text[: TRANSCRIPT_LINE_CHARS - 1] + "…"
        lines.append(f"{role}: {text}")
    return lines
