"""The task plan as data (docs/architecture.md §5c): steps, their status, the one text every reader shows.

The ``update_plan`` tool validates a model's list into a ``Plan`` and stores it in its call's meta
(``extra["plan"]``); the current plan is the newest one stored in the conversation, folded messages
included. Compaction pins ``render()`` of it in the summary, byte for byte what the tool returned, so no
compaction loses the task state; front ends (panel, ``/context``, ``--stream-json``) read the same data.
Pure: no I/O, and it names no tool (the meta key is the contract).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from catbuddy.errors import CatbuddyError

PLAN_META_KEY = "plan"  # ToolMeta.extra key under which a call stores the plan it set
MAX_STEP_CHARS = 400
MAX_EXPLANATION_CHARS = 1000
# What models send, mapped to our three states (Codex and Claude say "completed", gemini and
# mistral-vibe also "cancelled").
STATUS_ALIASES = {
    "pending": "pending",
    "todo": "pending",
    "not_started": "pending",
    "in_progress": "in_progress",
    "in-progress": "in_progress",
    "inprogress": "in_progress",
    "active": "in_progress",
    "doing": "in_progress",
    "done": "done",
    "completed": "done",
    "complete": "done",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "skipped": "cancelled",
}
STEP_TEXT_KEYS = ("step", "content", "title", "text", "description")
MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]", "cancelled": "[-]"}


class StepStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CANCELLED = "cancelled"  # dropped; kept visible so the plan shows what was decided


class PlanError(CatbuddyError, ValueError):
    """An invalid plan: the message names the problem, for the model to fix."""


@dataclass(frozen=True)
class PlanStep:
    text: str
    status: StepStatus

    def to_json(self) -> dict[str, str]:
        return {"step": self.text, "status": self.status.value}


@dataclass(frozen=True)
class Plan:
    steps: tuple[PlanStep, ...]
    explanation: str = ""

    @property
    def current(self) -> PlanStep | None:
        return next((s for s in self.steps if s.status is StepStatus.IN_PROGRESS), None)

    def count(self, status: StepStatus) -> int:
        return sum(1 for step in self.steps if step.status is status)

    def progress(self) -> str:
        """``2/5 done``: the panel's title and the tool's one-line summary."""
        finished = self.count(StepStatus.DONE) + self.count(StepStatus.CANCELLED)
        return f"{finished}/{len(self.steps)} done"

    def render(self) -> str:
        """The plan as text: what the tool returns, the summary pins and /context prints."""
        if not self.steps:
            return "Plan: (cleared)"
        lines = [f"Plan ({self.progress()}):"]
        lines += [f"{number}. {MARKS[step.status]} {step.text}" for number, step in enumerate(self.steps, 1)]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"steps": [step.to_json() for step in self.steps]}
        if self.explanation:
            data["explanation"] = self.explanation
        return data

    @classmethod
    def from_json(cls, data: Any) -> Plan | None:
        """A stored plan; None for anything that is not one (tolerant: a damaged record is skipped)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("steps"), list):
            return None
        steps: list[PlanStep] = []
        for item in data["steps"]:
            if not isinstance(item, Mapping) or not isinstance(item.get("step"), str):
                return None
            try:
                steps.append(PlanStep(item["step"], StepStatus(str(item.get("status")))))
            except ValueError:
                return None
        explanation = data.get("explanation")
        return cls(tuple(steps), explanation if isinstance(explanation, str) else "")


def parse_plan(args: Mapping[str, Any], max_steps: int) -> Plan:
    """The plan a model's arguments describe. Accepts Codex's ``{"plan": [{"step", "status"}],
    "explanation"}``, Claude/opencode/mistral-vibe's ``{"todos": [{"content", "status"}]}``, and steps
    given as plain strings (pending). Raises ``PlanError`` naming what is wrong."""
    items = args.get("plan")
    if items is None:
        items = args.get("todos", args.get("steps"))
    if items is None:
        raise PlanError(
            '`plan` is missing: send the whole list, e.g. {"plan": [{"step": "…", "status": "pending"}]}.'
        )
    if not isinstance(items, list):
        raise PlanError(f"`plan` must be a list of steps, got {type(items).__name__}.")
    if len(items) > max_steps:
        raise PlanError(
            f"the plan has {len(items)} steps; at most {max_steps} are allowed. Merge steps into larger ones."
        )
    steps = [_step(number, item) for number, item in enumerate(items, 1)]
    running = [number for number, step in enumerate(steps, 1) if step.status is StepStatus.IN_PROGRESS]
    if len(running) > 1:
        listed = ", ".join(str(n) for n in running)
        raise PlanError(f"steps {listed} are all in_progress; exactly one step may be in progress at a time.")
    explanation = args.get("explanation") or ""
    if not isinstance(explanation, str):
        raise PlanError(f"`explanation` must be a string, got {type(explanation).__name__}.")
    return Plan(tuple(steps), explanation.strip()[:MAX_EXPLANATION_CHARS])


def _step(number: int, item: Any) -> PlanStep:
    if isinstance(item, str):
        text, raw_status = item, "pending"
    elif isinstance(item, Mapping):
        found = next((item[key] for key in STEP_TEXT_KEYS if isinstance(item.get(key), str)), None)
        if found is None:
            raise PlanError(f"step {number} has no text: give it a `step` (or `content`) string.")
        text = str(found)
        raw_status = item.get("status", "pending")
    else:
        raise PlanError(
            f"step {number} must be an object with `step` and `status`, got {type(item).__name__}."
        )
    text = " ".join(text.split())
    if not text:
        raise PlanError(f"step {number} is empty.")
    if len(text) > MAX_STEP_CHARS:
        raise PlanError(f"step {number} is {len(text)} characters; keep each step under {MAX_STEP_CHARS}.")
    status = STATUS_ALIASES.get(str(raw_status).strip().lower().replace(" ", "_"))
    if status is None:
        raise PlanError(
            f"step {number} has the unknown status {raw_status!r}; use pending, in_progress or done "
            "(completed and cancelled are accepted too)."
        )
    return PlanStep(text, StepStatus(status))


def plan_of(meta: Mapping[str, Any] | None) -> Plan | None:
    """The plan a stored tool meta carries, if its call set one."""
    if not isinstance(meta, Mapping) or meta.get("status") not in ("ok", None):
        return None
    extra = meta.get("extra")
    return Plan.from_json(extra.get(PLAN_META_KEY)) if isinstance(extra, Mapping) else None


def latest_plan(metas: Iterable[Mapping[str, Any] | None], before: Plan | None = None) -> Plan | None:
    """The newest plan among ``metas`` (oldest first), else ``before`` (e.g. the one a summary carries)."""
    found = before
    for meta in metas:
        plan = plan_of(meta)
        if plan is not None:
            found = plan
    return found


def versions(metas: Sequence[Mapping[str, Any] | None]) -> int:
    return sum(1 for meta in metas if plan_of(meta) is not None)
