"""What the model sees now, measured: the per-layer table behind `catbuddy context` and `/context`.

The report is made from the governed request (``govern_request``), measured by ``measure_request``, so
its total is the size of the request that would be sent now, to the token (docs/architecture.md §3).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from catbuddy.config import ContextSettings, ModelPrice, Settings
from catbuddy.context.assembly.builder import BuiltPrompt
from catbuddy.context.counting.measure import RequestSize
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.context.governance.governor import Budget, FixedPart, GovernedContext, govern_context
from catbuddy.resources import workspace_defaults_dir
from catbuddy.session.history import WorkingHistory
from catbuddy.session.usage import SessionUsage


@dataclass
class PartSize:
    """One file's section of a layer: an instruction file, SOUL.md, … (``default``: the shipped text)."""

    label: str
    path: str
    tokens: int
    default: bool = False


@dataclass
class LayerSize:
    name: str
    tokens: int
    sources: list[str] = field(default_factory=list)
    parts: list[PartSize] = field(default_factory=list)


@dataclass
class ContextReport:
    model: str
    encoding: str
    layers: list[LayerSize]
    system_tokens: int  # the system message as sent (layers + separators + message frame)
    tools_tokens: int
    tool_count: int
    summary_tokens: int
    history_tokens: int  # the governed history, as it would be sent
    history_messages: int
    used: int  # the whole request, calibrated: what the budget is held to
    budget: int
    compact_threshold_tokens: int
    compact_message_threshold: int
    calibration: float
    context_window: int
    max_output_tokens: int
    exact: bool = True
    calibration_source: str = ""
    sandbox: str = ""  # how exec is confined, one line
    folded_messages: int = 0  # folded into the summary: out of the model's view, searchable with recall
    usage: SessionUsage | None = None  # the session's provider usage so far (None: no session)
    price: ModelPrice | None = None  # the model's configured price (None: no cost shown)
    prices: dict[str, ModelPrice] = field(default_factory=dict)  # of every model the usage names, if set

    @property
    def percent(self) -> float:
        return 100.0 * self.used / self.budget if self.budget else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["percent"] = round(self.percent, 1)
        data["usage"] = self.usage.to_dict(self.price, self.prices) if self.usage is not None else None
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


def govern_request(
    *,
    prompt: BuiltPrompt,
    tools: list[dict[str, Any]],
    history: WorkingHistory,
    counter: TokenCounter,
    budget: Budget,
    context: ContextSettings,
    calibration: float,
    compactable: Collection[str],
) -> GovernedContext:
    """The request governance makes of ``history`` now: what the runner sends and the reports show.
    ``compactable``: the tools whose old results may be stubbed (``ToolRegistry.microcompactable``)."""
    fixed = FixedPart(
        prompt.text,
        tools,
        history.summary,
        prompt.layer_tokens(counter.cache_key, counter.count_text),
    )
    return govern_context(
        history.messages,
        fixed,
        budget,
        counter,
        compactable=compactable,
        keep_recent_results=context.keep_recent_results,
        microcompact_min_tokens=context.microcompact_min_tokens,
        calibration=calibration,
    )


def context_report(
    *,
    settings: Settings,
    model: str,
    prompt: BuiltPrompt,
    size: RequestSize,
    history_messages: int,
    tool_count: int,
    counter: TokenCounter,
    budget: Budget,
    calibration_source: str = "",
    sandbox: str = "",
    folded_messages: int = 0,
    usage: SessionUsage | None = None,
) -> ContextReport:
    """The table for a request of ``size`` (a ``GovernedContext.size``, or the fixed part alone)."""
    part_tokens = prompt.part_tokens(counter.cache_key, counter.count_text)
    shipped = workspace_defaults_dir()
    layers = [
        LayerSize(
            layer.name,
            tokens,
            [str(p) for p in layer.sources],
            [
                PartSize(part.label, str(part.path), count, part.path.parent == shipped)
                for part, count in zip(layer.parts, part_tokens[layer.name], strict=True)
            ],
        )
        for layer, tokens in zip(
            prompt.layers, prompt.layer_tokens(counter.cache_key, counter.count_text).values(), strict=True
        )
    ]
    return ContextReport(
        model=model,
        encoding=counter.encoding_name,
        layers=layers,
        system_tokens=size.system,
        tools_tokens=size.tools,
        tool_count=tool_count,
        summary_tokens=size.summary,
        history_tokens=size.history,
        history_messages=history_messages,
        used=size.tokens,
        budget=budget.limit,
        compact_threshold_tokens=int(budget.limit * settings.context.compact_token_ratio),
        compact_message_threshold=settings.context.compact_message_threshold,
        calibration=size.calibration,
        context_window=budget.context_window,
        max_output_tokens=budget.max_output_tokens,
        exact=counter.exact,
        calibration_source=calibration_source,
        sandbox=sandbox,
        folded_messages=folded_messages,
        usage=usage,
        price=settings.price_for(model),
        prices=prices_of(settings, usage),
    )


def prices_of(settings: Settings, usage: SessionUsage | None) -> dict[str, ModelPrice]:
    """The configured price of each model the session's calls went to (models without one are left out)."""
    named = [model for model, _ in usage.models] if usage is not None else []
    return {model: price for model in named if (price := settings.price_for(model)) is not None}


def part_label(part: PartSize) -> str:
    return f"{part.label} (shipped default)" if part.default else part.label


def format_table(report: ContextReport) -> str:
    """A plain-text table for the terminal."""
    rows: list[tuple[str, int]] = []
    for layer in report.layers:
        rows.append((layer.name, layer.tokens))
        rows += [(f"  {part_label(part)}", part.tokens) for part in layer.parts]
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
    source = report.calibration_source or f"×{report.calibration:.3f}"
    lines.append(f"model {report.model}, encoding {report.encoding}{note}, calibration {source}")
    if report.usage is not None:
        lines.append(report.usage.describe(report.price, report.prices))
    if report.sandbox:
        lines.append(f"exec sandbox: {report.sandbox}")
    if report.folded_messages:
        lines.append(
            f"{report.folded_messages:,} earlier messages are folded into the summary; all of them are "
            "searchable with the recall tool"
        )
    return "\n".join(lines)
