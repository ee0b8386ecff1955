"""`catbuddy context`: what the model would see now, with no LLM call (measured as the loop measures)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from catbuddy.agent.plan_report import format_delegation, plan_and_delegation
from catbuddy.agent.subagent import own_agents_layer
from catbuddy.agent.toolset import build_registry, refresh_external
from catbuddy.config import Settings
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.context.counting.calibration import CalibrationStore
from catbuddy.context.counting.measure import measure_request
from catbuddy.context.counting.tokens import REPLY_PRIMING, counter_for
from catbuddy.context.governance.governor import GovernedContext
from catbuddy.context.governance.report import (
    ContextReport,
    budget_for,
    context_report,
    format_table,
    govern_request,
)
from catbuddy.memory.status import format_status, memory_status
from catbuddy.sandbox import describe as sandbox_description
from catbuddy.session.history import WorkingHistory, rebuild_history
from catbuddy.session.records import read_session_file
from catbuddy.session.store import SessionStore
from catbuddy.session.usage import SessionUsage, usage_of
from catbuddy.subagents.catalog import load_agents
from catbuddy.workspace import Workspace


@dataclass
class ContextView:
    report: ContextReport
    system_prompt: str
    history: WorkingHistory | None = None
    governed: GovernedContext | None = None
    load_problems: tuple[str, ...] = ()
    mcp_status: str = ""
    warnings: tuple[str, ...] = ()  # workspace files left out of the prompt, and why
    memory: dict[str, Any] | None = None  # pending entries and the last Dream (memory/status.py)
    delegation: dict[str, Any] | None = None  # the session's plan and subagent calls (plan_view.py)

    @property
    def total_tokens(self) -> int:
        """The request's size (raw count; ``report.used`` is the calibrated one)."""
        if self.governed is not None:
            return self.governed.size.raw
        return self.report.system_tokens + self.report.tools_tokens + REPLY_PRIMING

    def to_json(self) -> dict[str, Any]:
        report = self.report
        out: dict[str, Any] = {
            "model": report.model,
            "encoding": report.encoding,
            "exact": report.exact,
            "system_prompt": self.system_prompt,
            "warnings": list(self.warnings),
            "layers": [
                {
                    "name": layer.name,
                    "tokens": layer.tokens,
                    "sources": layer.sources,
                    "files": [asdict(part) for part in layer.parts],
                }
                for layer in report.layers
            ],
            "system_prompt_tokens": report.system_tokens,
            "tools_tokens": report.tools_tokens,
            "tool_count": report.tool_count,
            "total_tokens": self.total_tokens,
            "calibration": report.calibration,
            "calibration_source": report.calibration_source,
            "sandbox": report.sandbox,
            "used_tokens": report.used,
            "budget": {
                "context_window": report.context_window,
                "max_output_tokens": report.max_output_tokens,
                "safety_margin": report.context_window - report.max_output_tokens - report.budget,
                "limit": report.budget,
                "compact_threshold_tokens": report.compact_threshold_tokens,
                "compact_message_threshold": report.compact_message_threshold,
            },
        }
        if self.memory is not None:
            out["memory"] = self.memory
        if self.governed is not None and self.history is not None:
            out["summary"] = self.history.summary
            out["compaction"] = compaction_json(self.history)
            out["messages"] = self.governed.messages
            out["report"] = self.governed.report.to_dict()
            out["load_problems"] = list(self.load_problems)
        if report.usage is not None:
            out["usage"] = report.usage.to_dict(report.price, report.prices)
        if self.delegation is not None:
            out.update(self.delegation)
        return out

    def to_text(self) -> str:
        parts = [f"! {warning}" for warning in self.warnings]
        parts += [
            "=== System prompt ===",
            self.system_prompt,
            "",
            "=== Tokens by layer ===",
            format_table(self.report),
        ]
        if self.mcp_status:
            parts += ["", "=== MCP servers ===", self.mcp_status]
        if self.memory is not None:
            parts += ["", "=== Memory ===", format_status(self.memory)]
        if self.governed is not None:
            parts += [
                "",
                f"=== Governed history ({len(self.governed.history)} messages, as they would be sent now) ===",
            ]
            for problem in self.load_problems:
                parts.append(f"! {problem}")
            if self.history is not None and self.history.summary_id:
                parts.append(
                    f"(summary of compaction {self.history.summary_id}: {self.history.folded:,} earlier messages "
                    "folded, all searchable with recall; `catbuddy sessions show` prints its ledger)"
                )
            for message in self.governed.messages[1:]:
                parts.append(_render(message))
            summary = self.governed.report.summary() or "nothing to change"
            if self.delegation is not None:
                parts += format_delegation(self.delegation)
            parts += ["", "=== Governance report ===", summary]
            report = self.governed.report
            before = f"{report.tokens_before:,}" if report.tokens_before_exact else f"~{report.tokens_before:,} (estimated)"
            parts.append(
                f"tokens {before} → {report.tokens_after:,} (calibrated {report.calibrated_after:,}) "
                f"of a {report.budget:,}-token budget"
            )
        return "\n".join(parts)


def compaction_json(history: WorkingHistory) -> dict[str, Any] | None:
    """The compaction in force, as data: its ledger, the user's words it carries, the model's prose."""
    if history.summary_id is None:
        return None
    data = history.compaction_data
    return {
        "id": history.summary_id,
        "folded_messages": history.folded,
        "searchable_messages": history.folded + len(history.entries),
        "mode": data.get("mode"),
        "prose": data.get("prose"),
        "ledger": data.get("ledger"),
        "user_messages": data.get("user_messages"),
        "user_messages_left_out": data.get("user_messages_left_out", 0),
    }


def _render(message: dict[str, Any]) -> str:
    role = message.get("role", "?")
    lines = [
        f"--- {role}" + (f" (tool_call_id {message['tool_call_id']})" if message.get("tool_call_id") else "")
    ]
    content = message.get("content")
    if content:
        lines.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        lines.append(f"→ {function.get('name')}({function.get('arguments')}) [{call.get('id')}]")
    return "\n".join(lines)


def load_history(
    workspace: Workspace, history_file: Path | None, session_id: str | None
) -> tuple[WorkingHistory, tuple[str, ...], SessionUsage, dict[str, Any]]:
    if history_file is not None:
        path = history_file
    else:
        assert session_id is not None
        store = SessionStore(workspace.sessions_dir)
        path = store.find(session_id)
    loaded = read_session_file(path)
    history = rebuild_history(loaded.records)
    problems = tuple(loaded.problems) + tuple(history.problems)
    return history, problems, usage_of(loaded.records), plan_and_delegation(loaded.records)


def build_view(
    workspace: Workspace,
    settings: Settings,
    *,
    channel: str = "tui",
    history_file: Path | None = None,
    session_id: str | None = None,
    window: int | None = None,
    max_output: int | None = None,
    connect_mcp: bool = True,
) -> ContextView:
    """Raises ContextOverflowError (from governance) and SessionError/SessionFileError (bad input)."""
    model = settings.model_name
    builder = ContextBuilder(workspace, settings)
    registry = build_registry(subagents=settings.agents.max_depth >= 1)
    mcp_status = ""
    if connect_mcp and settings.mcp_servers:
        mcp_status = asyncio.run(_snapshot_mcp(settings, workspace, builder, registry))
    counter = counter_for(settings.encoding_for(model))
    budget = budget_for(settings, model, window, max_output)
    calibration = CalibrationStore.in_home(workspace.home).get(model)
    prompt = builder.build(channel)
    if settings.agents.max_depth >= 1:  # the user's own agents, as the loop adds them (agent/subagent.py)
        prompt = prompt.extended(own_agents_layer(load_agents(workspace)))
    tools = registry.schemas()
    history: WorkingHistory | None = None
    governed: GovernedContext | None = None
    problems: tuple[str, ...] = ()
    usage: SessionUsage | None = None
    delegation: dict[str, Any] | None = None
    if history_file is not None or session_id is not None:
        history, problems, usage, delegation = load_history(workspace, history_file, session_id)
        governed = govern_request(
            prompt=prompt,
            tools=tools,
            history=history,
            counter=counter,
            budget=budget,
            context=settings.context,
            calibration=calibration.factor,
            compactable=registry.microcompactable(),
        )
        size = governed.size
    else:  # the fixed part alone: shown even when it is too big to send
        size = measure_request(counter, system_prompt=prompt.text, tools=tools, calibration=calibration.factor)
    report = context_report(
        settings=settings,
        model=model,
        prompt=prompt,
        size=size,
        history_messages=len(governed.history) if governed else 0,
        tool_count=len(tools),
        counter=counter,
        budget=budget,
        calibration_source=calibration.describe(),
        sandbox=sandbox_description(settings),
        folded_messages=history.folded if history is not None else 0,
        usage=usage,
    )
    memory = memory_status(workspace, settings)
    return ContextView(
        report, prompt.text, history, governed, problems, mcp_status, tuple(prompt.warnings), memory, delegation
    )


async def _snapshot_mcp(
    settings: Settings, workspace: Workspace, builder: ContextBuilder, registry: Any
) -> str:
    """Connect the MCP servers, take their tools and runtime lines, then shut them down again."""
    from catbuddy.mcp.client import McpManager, format_mcp_status

    manager = McpManager(settings.mcp_servers, workspace.work_root)
    try:
        await manager.start()
        await manager.wait_ready()
        refresh_external(registry, manager.tools())
        builder.add_runtime_source(_FrozenRuntime(manager.runtime_lines(), manager.runtime_fingerprint()))
        return format_mcp_status(manager.statuses())
    finally:
        await manager.aclose()


@dataclass
class _FrozenRuntime:
    lines: list[str]
    fingerprint: str

    def runtime_lines(self) -> list[str]:
        return list(self.lines)

    def runtime_fingerprint(self) -> str:
        return self.fingerprint
