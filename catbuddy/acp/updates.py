"""catbuddy's events as ACP `session/update` notifications: reply text as message chunks, reasoning as
thought chunks, tool calls with their status, output and (for edits) a diff, the plan when the engine
emits one. Plain functions of the events, with one piece of state: the text of a file before an edit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import ToolCallLocation

from catbuddy.agent import events as ev
from catbuddy.safety.kinds import ToolKind

DIFF_MAX_BYTES = 1024 * 1024  # files larger than this get their result text, not a diff
# catbuddy's ToolKind values as ACP's tool kinds (an edit's diff is shown from the file before and after).
TOOL_KINDS = {ToolKind.READ.value: "read", ToolKind.EDIT.value: "edit", ToolKind.EXEC.value: "execute",
              ToolKind.NETWORK.value: "fetch", ToolKind.EXTERNAL.value: "other"}  # fmt: skip
PLAN_STATUS = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
    "completed": "completed",
}


class UpdateMapper:
    """Maps one session's events; keeps the text of files that edits are about to change."""

    def __init__(self, work_root: Path) -> None:
        self.work_root = work_root
        self._before: dict[str, tuple[Path, str | None]] = {}  # call id -> (file, its text before)

    def updates(self, event: ev.Event) -> list[Any]:
        if isinstance(event, ev.TextDelta):
            return [update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, ev.ReasoningDelta):
            return [update_agent_thought_text(event.text)] if event.text else []
        if isinstance(event, ev.ToolCallStarted):
            return [self._started(event)]
        if isinstance(event, ev.ToolCallFinished):
            return [self._finished(event)]
        if isinstance(event, ev.ErrorOccurred):
            hint = f" {event.hint}" if event.hint else ""
            return [update_agent_message_text(f"\n\n**Error:** {event.message}{hint}\n")]
        if isinstance(event, ev.Notice) and event.level in ("warning", "error"):
            return [update_agent_thought_text(f"{event.text}\n")]
        if isinstance(event, ev.PlanUpdated):
            return [update_plan([_plan_entry(step) for step in event.steps])]
        return []

    def _started(self, event: ev.ToolCallStarted) -> Any:
        arguments = _arguments(event.arguments)
        path = arguments.get("path") if isinstance(arguments.get("path"), str) else None
        locations = None
        if path:
            full = self._full(path)
            locations = [ToolCallLocation(path=str(full))]
            if event.tool_kind == ToolKind.EDIT.value:
                self._before[event.call_id] = (full, _read(full))
        kind = TOOL_KINDS.get(event.tool_kind, "other")
        title = f"{event.name} {event.summary}".strip()
        return start_tool_call(
            event.call_id,
            title,
            kind=kind,  # type: ignore[arg-type]
            status="in_progress",
            locations=locations,
            raw_input=arguments,
        )

    def _finished(self, event: ev.ToolCallFinished) -> Any:
        content: list[Any] = []
        before = self._before.pop(event.call_id, None)
        if before is not None and not event.is_error:
            path, old = before
            new = _read(path)
            if new is not None:
                content.append(tool_diff_content(str(path), new, old))
        if event.result:
            content.append(tool_content(text_block(event.result)))
        return update_tool_call(
            event.call_id,
            status="failed" if event.is_error else "completed",
            content=content or None,
            raw_output={"result": event.result, "meta": event.meta}
            if event.meta
            else {"result": event.result},
        )

    def _full(self, path: str) -> Path:
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.work_root / candidate


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > DIFF_MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _plan_entry(step: dict[str, str]) -> Any:
    status = PLAN_STATUS.get(step.get("status", "pending"), "pending")
    return plan_entry(step.get("step", ""), status=status)  # type: ignore[arg-type]
