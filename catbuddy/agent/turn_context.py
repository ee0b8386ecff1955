"""Everything one turn (or one compaction) needs, handed in explicitly (docs/architecture.md §5).

The agent loop builds a fresh ``TurnContext`` when a turn or a /compact starts: the model, counter and
budget are fixed for its duration (a /model switch applies to the next turn), and the collaborators are
the loop's own objects. The runner and the compaction manager use nothing else — no back-reference to
the loop, so ``agent/`` has no import circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catbuddy.agent.approval_broker import ApprovalBroker
from catbuddy.agent.bus import EventBus
from catbuddy.checkpoints.manager import Checkpoints
from catbuddy.config import Settings
from catbuddy.context.assembly.builder import BuiltPrompt, ContextBuilder
from catbuddy.context.counting.calibration import CalibrationStore
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.context.governance.governor import Budget
from catbuddy.hooks.runner import HookRunner
from catbuddy.llm.protocol import ProviderSource
from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.session.conversation import Conversation
from catbuddy.tools.base import ToolContext
from catbuddy.tools.registry import ToolRegistry
from catbuddy.workspace import Workspace


@dataclass(frozen=True)
class TurnContext:
    settings: Settings
    workspace: Workspace
    model: str
    channel: str
    interactive: bool  # someone can answer approval requests
    conversation: Conversation  # the session on disk and the working history
    builder: ContextBuilder
    registry: ToolRegistry
    counter: TokenCounter
    budget: Budget
    calibration: CalibrationStore
    policy: ApprovalPolicy
    tools: ToolContext
    provider: ProviderSource
    bus: EventBus
    approvals: ApprovalBroker
    secrets: tuple[str, ...] = ()  # literal keys catbuddy holds: never in a tool result
    # Layers after the assembled prompt, (name, text): a subagent's instructions, plan mode's (§5c).
    extra_layers: tuple[tuple[str, str], ...] = ()
    checkpoints: Checkpoints | None = None  # captures the work tree before the turn's first write
    hooks: HookRunner | None = None  # the configured hooks (agent/hook_steps.py); None: there are none

    @property
    def calibration_factor(self) -> float:
        return self.calibration.factor(self.model)

    @property
    def compact_threshold(self) -> int:
        """Tokens (calibrated) above which the history is compacted before the next call."""
        return int(self.budget.limit * self.settings.context.compact_token_ratio)


@dataclass(frozen=True)
class RequestParts:
    """The parts of a request that do not come from the history, built once per model call."""

    prompt: BuiltPrompt
    tools: list[dict[str, Any]]
    compactable: frozenset[str]  # the tools whose old results governance may stub

    @classmethod
    def build(cls, ctx: TurnContext) -> RequestParts:
        prompt = ctx.builder.build(ctx.channel).extended(ctx.extra_layers)
        return cls(prompt, ctx.registry.schemas(), ctx.registry.microcompactable())
