"""Plan mode (docs/architecture.md §5c): only reading tools are offered and allowed, and the model is told
it is planning. The mode is the loop's; this module holds what it changes in a turn: the tools offered
(``PlanModeRegistry``), what may run (``PlanModePolicy``) and the prompt layer (``plan_mode_layer``).

Commands: `exec` is offered, and runs only what the shared read-only classifier
(``safety/readonly.is_known_safe``) knows to be safe; every other command is refused, in every approval
mode. The deny rules still apply to the commands it lets through.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from catbuddy.context.compaction.prompts import render
from catbuddy.safety.decision import ALLOW, DENY, GuardDecision
from catbuddy.safety.kinds import ApprovalSubject, ToolKind
from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.tools.base import Tool
from catbuddy.tools.registry import ToolRegistry

TEMPLATE = "plan_mode.md.j2"
LAYER = "plan mode"
READ_KINDS = (ToolKind.READ, ToolKind.NETWORK)
REFUSAL = (
    "plan mode is on: only reading tools and known read-only commands run; {what} would change something "
    "(or cannot be shown not to). Finish the plan instead; the user leaves plan mode to carry it out."
)

SafeCheck = Callable[[str, Path], bool]


class PlanModeRegistry(ToolRegistry):
    """The tools a plan-mode request offers (reading ones and `exec`), over the full registry: a call to
    any other tool still resolves, so the policy refuses it by name rather than as an unknown tool."""

    def __init__(self, full: ToolRegistry) -> None:
        super().__init__([t for t in full if t.kind in READ_KINDS or t.kind is ToolKind.EXEC])
        self.full = full

    def get(self, name: str) -> Tool | None:
        return super().get(name) or self.full.get(name)


class PlanModePolicy:
    """The approval policy in plan mode: reading tools as usual, known read-only commands allowed (the
    deny rules first), anything else refused — in every approval mode, yolo too."""

    def __init__(self, policy: ApprovalPolicy, work_root: Path, safe: SafeCheck | None = None) -> None:
        self._policy = policy
        self._work_root = work_root
        self._safe = safe  # None: the shared classifier, imported at the first command (off the run path)

    def __getattr__(self, name: str) -> Any:  # remember, remembered, … as the wrapped policy has them
        return getattr(self._policy, name)

    @property
    def mode(self) -> str:
        return str(self._policy.mode)

    def decide(self, tool: ApprovalSubject, args: dict[str, Any]) -> GuardDecision:
        if tool.kind in READ_KINDS:
            return self._policy.decide(tool, args)
        if tool.kind is ToolKind.EXEC:
            command = str(args.get("command", ""))
            if command.strip() and self._known_safe(command):
                decision = self._policy.decide(tool, args)
                if decision.action == DENY:
                    return decision
                return GuardDecision(ALLOW, decision.reason, sandbox=decision.sandbox)
            return GuardDecision(DENY, REFUSAL.format(what=f"`{command[:120]}`"))
        return GuardDecision(DENY, REFUSAL.format(what=tool.name))

    def _known_safe(self, command: str) -> bool:
        if self._safe is None:
            from catbuddy.safety.readonly import is_known_safe

            self._safe = is_known_safe
        return self._safe(command, self._work_root)


def plan_mode_layer(registry: ToolRegistry) -> tuple[str, str]:
    names = ", ".join(f"`{tool.name}`" for tool in registry if tool.kind is not ToolKind.EXEC)
    return (LAYER, render(TEMPLATE, tools=names))


class PlanMode:
    """The loop's plan mode: on or off, and what a turn in it gets (the registry, policy and layer)."""

    def __init__(self, work_root: Path) -> None:
        self.active = False
        self._work_root = work_root

    def registry(self, full: ToolRegistry) -> ToolRegistry:
        return PlanModeRegistry(full) if self.active else full

    def policy(self, policy: ApprovalPolicy) -> ApprovalPolicy:
        # Duck-typed: the runner reads decide/mode/remember, which the wrapper has.
        return PlanModePolicy(policy, self._work_root) if self.active else policy  # type: ignore[return-value]

    def layers(self, registry: ToolRegistry) -> tuple[tuple[str, str], ...]:
        return (plan_mode_layer(registry),) if self.active else ()
