"""What the model sees now, measured: the per-layer table behind `catbuddy context` and `/context`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from catbuddy.config import Settings
from catbuddy.context.builder import BuiltPrompt
from catbuddy.context.governor import Budget
from catbuddy.context.tokens import TokenCounter
from catbuddy.session.history import summary_message


@dataclass
class LayerSize:
    name: str
    tokens: int
    sources: list[str] = field(default_factory=list)


@dataclass
class ContextReport:
    model: str
    encoding: str
    layers: list[LayerSize]
    system_tokens: int  # the system message as sent (layers + separators + message frame)
    tools_tokens: int
    tool_count: int
    summary_tokens: int
    history_tokens: int
    history_messages: int
    used: int  # the whole request, calibrated
    budget: int
    compact_threshold_tokens: int
    compact_message_threshold: int
    calibration: float
    context_window: int
    max_output_tokens: int
    exact: bool = True

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.budget if self.budget else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["percent"] = round(self.percent, 1)
        return data


def budget_for(
    settings: Settings, model: str, window: int | None = None, max_output: int | None = None
) -> Budget:
    spec = settings.model_spec(model)
    return Budget(
        context_window=window or spec.context_window,
        max_output_tokens=max_output if max_output is not None else spec.max_output_tokens,
        safety_margin=settings.context.safety_margin,
    )


def measure(
    *,
    settings: Settings,
    model: str,
    prompt: BuiltPrompt,
    tools: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    budget: Budget,
    summary: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
    calibration: float = 1.0,
) -> ContextReport:
    layers = [
        LayerSize(layer.name, counter.count_text(layer.text), [str(p) for p in layer.sources])
        for layer in prompt.layers
    ]
    system_tokens = counter.count_message({"role": "system", "content": prompt.text})
    tools_tokens = counter.count_tools(list(tools))
    summary_tokens = counter.count_message(summary_message(summary)) if summary else 0
    history_tokens = sum(counter.count_message(m) for m in history)
    raw = system_tokens + tools_tokens + summary_tokens + history_tokens + 3
    return ContextReport(
        model=model,
        encoding=counter.encoding_name,
        layers=layers,
        system_tokens=system_tokens,
        tools_tokens=tools_tokens,
        tool_count=len(tools),
        summary_tokens=summary_tokens,
        history_tokens=history_tokens,
        history_messages=len(history),
        used=int(raw * calibration),
        budget=budget.limit,
        compact_threshold_tokens=int(budget.limit * settings.context.compact_token_ratio),
        compact_message_threshold=settings.context.compact_message_threshold,
        calibration=calibration,
        context_window=budget.context_window,
        max_output_tokens=budget.max_output_tokens,
        exact=counter.exact,
    )


def format_table(report: ContextReport) -> str:
    """A plain-text table for the terminal."""
    rows = [(layer.name, layer.tokens) for layer in report.layers]
    rows += [
        ("system prompt (as sent)", report.system_tokens),
        (f"tool schemas ({report.tool_count})", report.tools_tokens),
        ("summary", report.summary_tokens),
        (f"history ({report.history_messages} messages)", report.history_tokens),
    ]
    width = max(len(name) for name, _ in rows) + 2
    lines = [f"{'layer':<{width}}{'tokens':>10}", "-" * (width + 10)]
    lines += [f"{name:<{width}}{tokens:>10,}" for name, tokens in rows]
    lines.append("-" * (width + 10))
    lines.append(f"{'request (calibrated)':<{width}}{report.used:>10,}")
    lines.append(
        f"budget {report.budget:,} = window {report.context_window:,} − max output {report.max_output_tokens:,} "
        f"− safety margin; used {report.percent:.1f}%; compaction at {report.compact_threshold_tokens:,} tokens "
        f"or {report.compact_message_threshold} messages"
    )
    note = "" if report.exact else " (tiktoken unavailable: estimated)"
    lines.append(
        f"model {report.model}, encoding {report.encoding}{note}, calibration ×{report.calibration:.3f}"
    )
    return "\n".join(lines)
