"""The plan, plan mode and subagents in the app (docs/architecture.md §5c): the plan panel's events, `/plan`,
Shift+Tab (ask → auto-edit → plan mode → ask), and a running `task` call's progress line. A mixin of
CatbuddyApp, over the slash commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from catbuddy.tui.lazy import lazy_module
from catbuddy.tui.slash import SlashCommands
from catbuddy.tui.widgets.plan_panel import PlanPanel

if TYPE_CHECKING:
    from catbuddy.agent import events as ev
else:
    ev = lazy_module("catbuddy.agent.events")

ACCEPTED_MESSAGE = "The plan is accepted: carry it out, keeping the plan up to date as you go."
PLAN_READY = "Plan ready. /plan accept (or Shift+Tab) carries it out; or keep typing to refine it."


class PlanCommands(SlashCommands):
    if TYPE_CHECKING:
        from catbuddy.tui.widgets.messages import ToolBlock

        async def show_early(self, text: str) -> None: ...
        def tool_block(self, call_id: str) -> ToolBlock | None: ...

    @property
    def plan_panel(self) -> PlanPanel:
        return self.query_one(PlanPanel)

    def on_plan_event(self, event: ev.Event) -> bool:
        """Apply a plan event; False when ``event`` is not one."""
        if isinstance(event, ev.PlanUpdated):
            self.plan_panel.show_plan(event.steps, event.explanation)
        elif isinstance(event, ev.PlanModeChanged):
            self.status.set(plan_mode=event.active)
            self.notice("Plan mode on: only reading tools run; the model ends with a plan." if event.active
                        else "Plan mode off.", "warning" if event.active else "success")  # fmt: skip
        elif isinstance(event, ev.SubagentProgress):
            block = self.tool_block(event.call_id)
            if block is not None:
                block.set_progress(event.text)
        elif isinstance(event, ev.TurnEnded):
            loop = self.loop
            if loop is not None and loop.plan_mode and loop.current_plan() is not None:
                self.notice(PLAN_READY, "info")
            return False  # the app ends the turn as usual
        else:
            return False
        return True

    async def slash_plan(self, argument: str) -> None:
        agent = self.agent
        choice = argument.strip().lower()
        if choice == "accept":
            await self.accept_plan()
        elif choice in ("", "on", "off"):
            agent.set_plan_mode(not agent.plan_mode if not choice else choice == "on")
        else:
            self.notice(f"`{argument}`: use /plan, /plan on, /plan off or /plan accept", "warning")

    async def accept_plan(self) -> None:
        """Leave plan mode keeping the plan, and tell the model to carry it out."""
        agent = self.agent
        plan = agent.accept_plan()
        if plan is None:
            self.notice("No plan to accept yet: the model sets one with update_plan.", "info")
            return
        self.notice("Plan accepted.", "success")
        await self.show_early(ACCEPTED_MESSAGE)
        agent.submit(ACCEPTED_MESSAGE)

    async def action_cycle_mode(self) -> None:
        """Shift+Tab: ask → auto-edit → plan mode → ask (from plan mode with a plan: accept it)."""
        agent = self.loop
        if agent is None:
            return
        if agent.plan_mode:
            if agent.current_plan() is not None and not self.running():
                await self.accept_plan()
            else:
                agent.set_plan_mode(False)
            agent.set_approval_mode("ask")
        elif agent.approval_mode == "ask":
            agent.set_approval_mode("auto-edit")
        else:
            agent.set_plan_mode(True)
        self.status.set(approval=agent.approval_mode)

    def action_toggle_plan_panel(self) -> None:
        self.plan_panel.toggle()

    def show_current_plan(self) -> None:
        """The panel for the session now shown (opened, resumed or new)."""
        plan = self.loop.current_plan() if self.loop is not None else None
        steps = [step.to_json() for step in plan.steps] if plan is not None else []
        self.plan_panel.show_plan(steps, plan.explanation if plan is not None else "")
        self.status.set(plan_mode=bool(self.loop is not None and self.loop.plan_mode))
