"""The ``task`` tool: hand a self-contained job to a subagent with a fresh context (docs/architecture.md §5c).

The tool only checks the call and shapes what the parent reads; running the child is the agent's
(``ToolContext.delegate``, an ``agent/subagent.Subagents``), because a child is a whole agent: its own
conversation, tools, model, governance and compaction. The parent's context grows by the child's final
answer alone, bounded (``[agents] answer_tokens``); the rest stays in the child's transcript, which
``recall`` searches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from catbuddy.safety.kinds import ToolKind
from catbuddy.tool_meta import ToolMeta
from catbuddy.tools.base import CURRENT_CALL_ID, Tool, ToolContext, ToolError, ToolResult

SUBAGENT_META_KEY = "subagent"  # ToolMeta.extra: what the child did (agent, session, status, tokens)
DISPLAY_META_KEY = "display"  # ToolMeta.extra: what a front end shows of a stored call when expanded
MAX_STORED_DISPLAY = 20_000
DONE = "done"
INCOMPLETE = "incomplete"  # turn limit reached, stopped, or failed: the answer is what it had
CUT_NOTE = (
    "\n\n[answer cut at {limit:,} tokens of {total:,}; the whole answer and the subagent's transcript are "
    "stored with this session: `recall` finds them]"
)


@dataclass(frozen=True)
class TaskRequest:
    description: str
    prompt: str
    agent: str
    call_id: str


@dataclass
class TaskOutcome:
    """What a finished child hands back."""

    answer: str
    status: str  # DONE or INCOMPLETE
    reason: str = ""  # why it is incomplete
    agent: str = ""
    session: str = ""  # the child's session id
    turns: int = 0  # model calls the child made
    spent_tokens: int = 0  # prompt tokens the child's requests carried (provider's figures when reported)
    usage: dict[str, int] = field(default_factory=dict)
    display: str = ""  # the child's transcript as a front end shows it under the call


class Delegate(Protocol):
    """What runs children: the agent's ``Subagents``."""

    def known_agents(self) -> dict[str, str]:
        """Agent name → description."""
        ...

    async def run(self, request: TaskRequest) -> TaskOutcome: ...

    def count(self, text: str) -> int: ...


class TaskTool(Tool):
    name = "task"
    parameters = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "3-7 words, shown to the user"},
            "prompt": {"type": "string"},
            "agent": {"type": "string"},
        },
        "required": ["description", "prompt"],
    }
    kind = ToolKind.READ  # the call itself changes nothing; the child's own calls ask as usual

    def summary(self, args: Mapping[str, Any]) -> str:
        agent = args.get("agent") or "explore"
        return f"{agent}: {args.get('description', '')}"[:200]

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        info = meta.extra.get(SUBAGENT_META_KEY)
        if not isinstance(info, Mapping):
            return super().result_summary(args, meta)
        line = f"{info.get('status', '?')}, {info.get('turns', 0)} calls, {info.get('spent_tokens', 0):,} tokens read"
        return line + f" → {info.get('returned_tokens', 0):,} returned"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        delegate: Delegate | None = ctx.delegate
        if delegate is None:
            raise ToolError(
                "subagents cannot start another subagent here (the depth limit, [agents] max_depth)."
            )
        prompt = str(args.get("prompt") or "").strip()
        if not prompt:
            raise ToolError("`prompt` is empty: write the whole job, the subagent sees nothing else.")
        agent = str(args.get("agent") or "explore").strip()
        known = delegate.known_agents()
        if agent not in known:
            listed = "; ".join(f"{name}: {text}" for name, text in sorted(known.items())) or "none"
            raise ToolError(f"there is no agent named {agent!r}. Known agents: {listed}.")
        request = TaskRequest(
            str(args.get("description") or "").strip(), prompt, agent, CURRENT_CALL_ID.get()
        )
        outcome = await delegate.run(request)
        return shape_result(outcome, delegate, ctx.settings.agents.answer_tokens)


def shape_result(outcome: TaskOutcome, delegate: Delegate, limit: int) -> ToolResult:
    """The child's answer as the parent reads it: bounded, and marked when incomplete."""
    answer = outcome.answer.strip() or "(the subagent gave no answer)"
    total = delegate.count(answer)
    if total > limit:
        answer = _cut(answer, limit, delegate) + CUT_NOTE.format(limit=limit, total=total)
    if outcome.status != DONE:
        answer = f"[incomplete: {outcome.reason or 'the subagent did not finish'}; this is what it had]\n\n{answer}"
    info = {
        "agent": outcome.agent,
        "session": outcome.session,
        "status": outcome.status,
        "turns": outcome.turns,
        "spent_tokens": outcome.spent_tokens,
        "returned_tokens": delegate.count(answer),
        **({"reason": outcome.reason} if outcome.reason else {}),
        **({"usage": outcome.usage} if outcome.usage else {}),
    }
    display = (
        f"{answer}\n\n── transcript of subagent {outcome.agent} ──\n{outcome.display}"
        if outcome.display
        else None
    )
    meta: dict[str, Any] = {SUBAGENT_META_KEY: info}
    if display:  # stored with the call, so a resumed session expands it the same (never sent to a model)
        meta[DISPLAY_META_KEY] = display[:MAX_STORED_DISPLAY]
    return ToolResult(answer, display=display, meta=meta)


def _cut(text: str, limit: int, delegate: Delegate) -> str:
    """The longest head of ``text`` (at a line break when one is near) that counts at most ``limit``."""
    low, high = 0, len(text)
    while low < high:  # binary search on characters: counting is the cost, a few dozen counts at most
        middle = (low + high + 1) // 2
        if delegate.count(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    head = text[:low]
    newline = head.rfind("\n", int(low * 0.8))
    return head[:newline] if newline > 0 else head
