"""Subagents: a `task` call runs a child agent with a fresh context (docs/architecture.md §5c).

A child is a whole agent turn of its own: its own conversation (a session file under the parent's,
``subagents/<parent session>/``), the same assembly plus its agent's instructions as a last layer, its
own tool subset (read-only unless its file lists tools), model, turn limit, governance and compaction —
and none of the parent's history. It shares the parent's provider, builder, calibration and approval
policy. Its approval requests reach the parent's front end with the child's name and a call id of their
own; a stop of the parent's turn cancels it (the partial work is kept and marked incomplete). When it
ends, ``SubagentFinished`` is recorded in the parent's session, linked to the parent's call: the child's
transcript, its final answer and its usage (which rolls up into the session's).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from catbuddy.agent.approval_broker import ApprovalBroker
from catbuddy.agent.bus import EventBus
from catbuddy.agent.compaction import CompactionManager, CompactionState
from catbuddy.agent.events import (
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AssistantMessage,
    ErrorOccurred,
    Event,
    Notice,
    SubagentFinished,
    SubagentProgress,
    SubagentStarted,
    ToolCallFinished,
    ToolCallStarted,
    TurnEndReason,
    UsageReported,
)
from catbuddy.agent.plan_report import format_transcript
from catbuddy.agent.runner import TurnOutcome, TurnRunner
from catbuddy.agent.turn_context import TurnContext
from catbuddy.context.compaction.plan import latest_plan
from catbuddy.context.counting.tokens import counter_for
from catbuddy.context.governance.report import budget_for
from catbuddy.safety.kinds import ToolKind
from catbuddy.session.conversation import Conversation
from catbuddy.session.store import SessionStore
from catbuddy.subagents.catalog import (
    SOURCE_SHIPPED,
    AgentCatalog,
    AgentDefinition,
    agents_fingerprint,
    load_agents,
)
from catbuddy.tools.base import ToolContext
from catbuddy.tools.registry import ToolRegistry
from catbuddy.tools.task import DONE, INCOMPLETE, TaskOutcome, TaskRequest, TaskTool, shape_result
from catbuddy.workspace import Workspace

log = logging.getLogger(__name__)

SUBAGENT_CHANNEL = "subagent"  # how identity.md.j2 tells a child what it is
SUBAGENTS_DIR = "subagents"  # under the sessions folder: subagents/<parent session id>/<child>.jsonl
READ_KINDS = (ToolKind.READ, ToolKind.NETWORK)
AGENT_LAYER = "agent"
AGENTS_LAYER = "agents"


class ChildApprovals(ApprovalBroker):
    """A child's approvals, kept by the parent's broker under ids of their own (``<parent call>/<call>``),
    so the parent's front end answers them through ``AgentLoop.answer_approval`` like any other, and two
    children's ``call_1`` never meet."""

    def __init__(self, parent: ApprovalBroker, prefix: str) -> None:
        super().__init__()
        self._parent = parent
        self.prefix = prefix

    def outer(self, call_id: str) -> str:
        return f"{self.prefix}/{call_id}"

    def pending(self) -> list[str]:
        return [
            c.removeprefix(self.prefix + "/")
            for c in self._parent.pending()
            if c.startswith(self.prefix + "/")
        ]

    def expect(self, call_id: str) -> asyncio.Future[ApprovalDecision]:
        return self._parent.expect(self.outer(call_id))

    async def wait(self, call_id: str) -> ApprovalDecision:
        return await self._parent.wait(self.outer(call_id))

    def answer(self, call_id: str, decision: ApprovalDecision) -> bool:
        return self._parent.answer(self.outer(call_id), decision)


class Subagents:
    """What runs the children of one agent (``ToolContext.delegate``): the loop's, at depth 0, or a
    child's own when the depth limit allows grandchildren. ``parent`` gives the parent's TurnContext now
    (its model, registry, conversation); ``plan_mode`` whether children must only read."""

    def __init__(
        self,
        parent: Callable[[], TurnContext],
        *,
        depth: int = 0,
        plan_mode: Callable[[], bool] = lambda: False,
        plan_layers: Callable[[], tuple[tuple[str, str], ...]] = lambda: (),
    ) -> None:
        self._parent = parent
        self.depth = depth
        self._plan_mode = plan_mode
        self._plan_layers = plan_layers
        self._slots: asyncio.Semaphore | None = None
        self._slot_count = 0
        self._layer_key: tuple[tuple[str, int, int], ...] | None = None
        self._layer: tuple[tuple[str, str], ...] = ()

    # --- what the model is told -------------------------------------------------------------------

    def prompt_layers(self, workspace: Workspace) -> tuple[tuple[str, str], ...]:
        """A layer naming the user's own agents (the `task` description names the shipped one), so the
        model knows it can delegate to them; nothing when there are none. Rebuilt only when an agent
        file changes (a stat of each), so the prompt prefix stays byte-identical."""
        key = agents_fingerprint(workspace)
        if key != self._layer_key:
            self._layer_key, self._layer = key, own_agents_layer(load_agents(workspace))
        return self._layer

    # --- what the task tool asks ------------------------------------------------------------------

    def catalog(self) -> AgentCatalog:
        return load_agents(self._parent().workspace)

    def known_agents(self) -> dict[str, str]:
        return {name: agent.description for name, agent in self.catalog().agents.items()}

    def count(self, text: str) -> int:
        return self._parent().counter.count_text(text)

    async def run(self, request: TaskRequest) -> TaskOutcome:
        parent = self._parent()
        definition = (await asyncio.to_thread(self.catalog)).get(request.agent)
        if definition is None:  # the tool checked; the file may have gone since
            return TaskOutcome("", INCOMPLETE, f"the agent {request.agent!r} no longer exists", request.agent)
        async with self._slot(parent.settings.agents.max_parallel):
            return await self._run_child(parent, definition, request)

    def _slot(self, size: int) -> asyncio.Semaphore:
        if self._slots is None or self._slot_count != size:
            self._slots, self._slot_count = asyncio.Semaphore(size), size
        return self._slots

    # --- one child --------------------------------------------------------------------------------

    async def _run_child(
        self, parent: TurnContext, definition: AgentDefinition, request: TaskRequest
    ) -> TaskOutcome:
        model = definition.model or parent.model
        sessions_dir = parent.tools.sessions_dir or parent.workspace.sessions_dir
        store = SessionStore(sessions_dir / SUBAGENTS_DIR / parent.conversation.id)
        conversation = await asyncio.to_thread(Conversation.create, store, parent.workspace.work_root, model)
        watcher = _ChildWatcher(parent.bus, definition.name, request.call_id or conversation.id, model)
        ctx = self._child_context(parent, definition, conversation, model, watcher)
        runner = TurnRunner(ctx, CompactionManager(ctx, CompactionState()))
        parent.bus.emit(
            SubagentStarted(request.call_id, definition.name, request.description, conversation.id, model)
        )
        outcome: TurnOutcome | None = None
        try:
            outcome = await runner.run(request.prompt)
        except asyncio.CancelledError:
            runner.keep_partial_work()
            self._finish(parent, definition, request, conversation, watcher, None, "stopped by the user")
            raise
        except Exception as exc:  # a child's failure is the parent's tool result, never its crash
            log.info("subagent %s failed: %r", definition.name, exc)
            watcher.error = watcher.error or f"{type(exc).__name__}: {exc}"
        return self._finish(parent, definition, request, conversation, watcher, outcome, "")

    def _child_context(
        self,
        parent: TurnContext,
        definition: AgentDefinition,
        conversation: Conversation,
        model: str,
        watcher: _ChildWatcher,
    ) -> TurnContext:
        settings = parent.settings
        max_turns = definition.max_turns or settings.agents.max_turns
        deeper = self.depth + 1 < settings.agents.max_depth
        bus = EventBus(parent.secrets)
        bus.set_recorder(conversation.record)
        bus.add_listener(watcher)
        tools = ToolContext(
            parent.workspace,
            settings,
            skills=parent.tools.skills,
            sessions_dir=conversation.session.path.parent,
            session_id=conversation.id,
            current_plan=lambda: latest_plan(entry.meta for entry in conversation.transcript),
        )
        child: TurnContext | None = None
        if deeper:
            tools.delegate = Subagents(
                lambda: child_ctx(),
                depth=self.depth + 1,
                plan_mode=self._plan_mode,
                plan_layers=self._plan_layers,
            )
        registry = child_registry(parent.registry, definition, deeper=deeper, plan_mode=self._plan_mode())
        every = getattr(parent.registry, "full", parent.registry)  # plan mode's registry wraps the full one
        unknown = [name for name in definition.tools or () if every.get(name) is None]
        if unknown:  # e.g. a Claude Code agent file's "Read, Grep": said, not fatal
            text = (
                f"Agent {definition.name} ({definition.path}) lists tools catbuddy does not have: "
                f"{', '.join(unknown)}. It runs without them; the tools are: {', '.join(every.names())}."
            )
            parent.bus.emit(Notice(text, "warning"))
        layers: tuple[tuple[str, str], ...] = (
            (AGENT_LAYER, f"## Agent: {definition.name}\n\n{definition.instructions}"),
        )
        if self._plan_mode():
            layers += self._plan_layers()
        child = TurnContext(
            settings=dataclasses.replace(settings, max_iterations=max_turns),
            workspace=parent.workspace,
            model=model,
            channel=SUBAGENT_CHANNEL,
            interactive=parent.interactive,
            conversation=conversation,
            builder=parent.builder,
            registry=registry,
            counter=counter_for(settings.encoding_for(model)),
            budget=budget_for(settings, model),
            calibration=parent.calibration,
            policy=parent.policy,
            tools=tools,
            provider=parent.provider,
            bus=bus,
            approvals=ChildApprovals(parent.approvals, watcher.prefix),
            secrets=parent.secrets,
            extra_layers=layers,
        )

        def child_ctx() -> TurnContext:
            assert child is not None
            return child

        return child

    def _finish(
        self,
        parent: TurnContext,
        definition: AgentDefinition,
        request: TaskRequest,
        conversation: Conversation,
        watcher: _ChildWatcher,
        outcome: TurnOutcome | None,
        stopped: str,
    ) -> TaskOutcome:
        status, reason = DONE, ""
        if stopped:
            status, reason = INCOMPLETE, stopped
        elif outcome is None or outcome.reason is TurnEndReason.ERROR:
            status, reason = INCOMPLETE, f"it failed: {watcher.error or 'an error ended its turn'}"
        elif outcome.reason is TurnEndReason.ITERATION_CAP:
            status, reason = INCOMPLETE, f"it reached its turn limit ({outcome.iterations} model calls)"
        elif outcome.reason is not TurnEndReason.DONE:
            status, reason = INCOMPLETE, str(outcome.reason.value)
        answer = (outcome.text if outcome is not None else "") or _last_text(conversation)
        transcript = [dict(entry.message) for entry in conversation.transcript]
        usage = watcher.usage()
        spent = usage.get("prompt_tokens") or watcher.counted
        result = TaskOutcome(
            answer=answer,
            status=status,
            reason=reason,
            agent=definition.name,
            session=conversation.id,
            turns=watcher.turns,
            spent_tokens=spent,
            usage=usage,
            display="\n".join(format_transcript(transcript)),
        )
        # Exactly what the parent reads: the answer as the task tool shapes it (cut, marked).
        returned = self.count(shape_result(result, self, parent.settings.agents.answer_tokens).content)
        try:
            parent.bus.emit(
                SubagentFinished(
                    request.call_id, definition.name, request.description, conversation.id, status, reason,
                    watcher.turns, spent, returned, answer, usage, transcript, watcher.model,
                )
            )  # fmt: skip
        finally:
            conversation.close()
        return result


class _ChildWatcher:
    """Listens to a child's bus: relays what the user must see (approvals, notices, named after the child)
    to the parent's bus, and keeps the child's usage and last error."""

    def __init__(self, parent_bus: EventBus, agent: str, prefix: str, model: str) -> None:
        self.parent_bus = parent_bus
        self.agent = agent
        self.prefix = prefix
        self.model = model  # the child's: its usage is priced at this model's price
        self.calls = 0  # model calls that reported usage
        self.turns = 0  # model calls (replies)
        self.counted = 0
        self.error = ""
        self._prompt = self._cached = self._completion = self._written = self._reasoning = 0
        self._asked: set[str] = set()  # child calls shown to the user (approval asked): their end is too

    def usage(self) -> dict[str, int]:
        if not self._prompt:
            return {}
        return {
            "calls": self.calls,
            "prompt_tokens": self._prompt,
            "cached_tokens": self._cached,
            "completion_tokens": self._completion,
            "cache_write_tokens": self._written,
            "reasoning_tokens": self._reasoning,
        }

    def __call__(self, event: Event) -> None:
        label = f"subagent {self.agent}"
        relayed: Event | None = None
        if isinstance(event, AssistantMessage):
            self.turns += 1
        elif isinstance(event, ToolCallStarted):
            relayed = SubagentProgress(self.prefix, self.agent, f"{event.name} {event.summary}".strip())
        elif isinstance(event, UsageReported):
            self.calls += 1
            self.counted += event.counted_prompt_tokens
            self._prompt += event.prompt_tokens
            self._cached += event.cached_tokens
            self._completion += event.completion_tokens
            self._written += event.cache_write_tokens
            self._reasoning += event.reasoning_tokens
        elif isinstance(event, ApprovalRequested):
            self._asked.add(event.call_id)
            relayed = dataclasses.replace(
                event,
                call_id=f"{self.prefix}/{event.call_id}",
                summary=f"[{label}] {event.summary}",
                reason=f"{label}: {event.reason}" if event.reason else label,
            )
        elif isinstance(event, ApprovalResolved | ToolCallFinished) and (
            isinstance(event, ApprovalResolved) or event.call_id in self._asked
        ):  # how an asked call ended: its block in the parent's view closes
            relayed = dataclasses.replace(event, call_id=f"{self.prefix}/{event.call_id}")
        elif isinstance(event, ErrorOccurred):
            self.error = event.message
            relayed = Notice(f"[{label}] {event.message}", "warning")
        elif isinstance(event, Notice):
            relayed = dataclasses.replace(event, text=f"[{label}] {event.text}")
        if relayed is not None:
            self.parent_bus.emit(relayed)


def child_registry(
    parent: ToolRegistry, definition: AgentDefinition, *, deeper: bool, plan_mode: bool
) -> ToolRegistry:
    """The child's tools: those its file lists, else every reading tool of the parent's (MCP ones too);
    `task` only below the depth limit; in plan mode, reading tools only."""
    if definition.tools is None:  # iterating plan mode's registry gives what it offers
        tools = [t for t in parent if t.kind in READ_KINDS and not isinstance(t, TaskTool)]
    else:
        source = getattr(parent, "full", parent)
        tools = [
            t
            for name in definition.tools
            if (t := source.get(name)) is not None and not isinstance(t, TaskTool)
        ]
        if plan_mode:
            tools = [t for t in tools if t.kind in READ_KINDS]
    if deeper:
        tools.append(TaskTool())
    return ToolRegistry(tools)


def own_agents_layer(catalog: AgentCatalog) -> tuple[tuple[str, str], ...]:
    """The prompt layer naming the user's own agents; empty when there are none (the default prompt)."""
    own = [agent for agent in (catalog.agents[n] for n in catalog.names()) if agent.source != SOURCE_SHIPPED]
    if not own:
        return ()
    lines = "\n".join(f"- {agent.name}: {agent.description}" for agent in own)
    return (
        (
            AGENTS_LAYER,
            f"## Subagents\n\nBesides `explore`, the `task` tool can start these agents:\n{lines}",
        ),
    )


def _last_text(conversation: Conversation) -> str:
    for entry in reversed(conversation.transcript):
        message: dict[str, Any] = entry.message
        if (
            message.get("role") == "assistant"
            and isinstance(message.get("content"), str)
            and message["content"].strip()
        ):
            return str(message["content"])
    return ""
