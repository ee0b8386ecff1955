"""Plan mode (docs/architecture.md §5c): only reading tools are offered and allowed, and the model is told
it is planning. The mode is the loop's; this module holds what it changes in a turn: the tools offered
(``PlanModeRegistry``), what may run (``PlanModePolicy``) and the prompt layer (``plan_mode_layer``).

Commands: plan mode allows only those the shared read-only classifier (``safety/readonly.is_known_safe``)
knows to be safe. Where that classifier is not installed, no command runs in plan mode and `exec` is not
offered.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from catbuddy.context.compaction.prompts import render
from catbuddy.safety.kinds import ApprovalSubject, ToolKind
from catbuddy.safety.policy import ApprovalPolicy, GuardDecision
from catbuddy.tools.base import Tool
from catbuddy.tools.registry import ToolRegistry

TEMPLATE = "plan_mode.md.j2"
LAYER = "plan mode"
READ_KINDS = (ToolKind.READ, ToolKind.NETWORK)
REFUSAL = "plan mode is on: only reading tools{commands} run; {what} would change something. Finish the plan instead."

SafeCheck = Callable[[str, Path], bool]


def known_safe_check() -> SafeCheck | None:
    """The shared read-only command classifier, when this catbuddy has it."""
    try:
        module = importlib.import_module("catbuddy.safety.readonly")
    except ImportError:
        return None
    check = getattr(module, "is_known_safe", None)
    return check if callable(check) else None


class PlanModeRegistry(ToolRegistry):
    """The tools a plan-mode request offers (reading ones; `exec` only with the classifier), over the full
    registry: a call to any other tool still resolves, so the policy refuses it by name rather than as
    an unknown tool."""

    def __init__(self, full: ToolRegistry, commands: bool) -> None:
        super().__init__([t for t in full if t.kind in READ_KINDS or (commands and t.kind is ToolKind.EXEC)])
        self.full = full

    def get(self, name: str) -> Tool | None:
        return super().get(name) or self.full.get(name)


class PlanModePolicy:
    """The approval policy in plan mode: reading tools as usual, known-safe commands allowed, anything
    else refused (in every approval mode, yolo too)."""

    def __init__(self, policy: ApprovalPolicy, work_root: Path, safe: SafeCheck | None) -> None:
        self._policy = policy
        self._work_root = work_root
        self._safe = safe

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    @property
    def mode(self) -> str:
        return str(self._policy.mode)

    def decide(self, tool: ApprovalSubject, args: dict[str, Any]) -> GuardDecision:
        commands = " and known read-only commands" if self._safe is not None else ""
        if tool.kind in READ_KINDS:
            return self._policy.decide(tool, args)
        if tool.kind is ToolKind.EXEC and self._safe is not None:
            command = str(args.get("command", ""))
            if command.strip() and self._safe(command, self._work_root):
                decision = self._policy.decide(tool, args)
                return (
                    decision
                    if decision.action == "deny"
                    else GuardDecision("allow", sandbox=decision.sandbox)
                )
            return GuardDecision("deny", REFUSAL.format(commands=commands, what=f"`{command[:120]}`"))
        return GuardDecision("deny", REFUSAL.format(commands=commands, what=f"{tool.name}"))


def plan_mode_layer(registry: ToolRegistry, commands: bool) -> tuple[str, str]:
    names = ", ".join(f"`{tool.name}`" for tool in registry if tool.kind is not ToolKind.EXEC)
    return (LAYER, render(TEMPLATE, tools=names, commands=commands).strip())


class PlanMode:
    """The loop's plan mode: on or off, and what a turn in it gets (the registry, policy and layer)."""

    def __init__(self, work_root: Path) -> None:
        self.active = False
        self._work_root = work_root
        self._safe = known_safe_check()

    @property
    def commands(self) -> bool:
        """Whether known-safe commands run in plan mode (the shared classifier is installed)."""
        return self._safe is not None

    def registry(self, full: ToolRegistry) -> ToolRegistry:
        return PlanModeRegistry(full, self.commands) if self.active else full

    def policy(self, policy: ApprovalPolicy) -> ApprovalPolicy:
        # Duck-typed: the runner reads decide/mode/remember, which the wrapper has.
        return PlanModePolicy(policy, self._work_root, self._safe) if self.active else policy  # type: ignore[return-value]

    def layers(self, registry: ToolRegistry) -> tuple[tuple[str, str], ...]:
        return (plan_mode_layer(registry, self.commands),) if self.active else ()
