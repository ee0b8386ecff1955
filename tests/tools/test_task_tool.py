"""The `task` tool's own part (tools/task.py): the call is checked, and the child's answer is bounded and
marked; the rest of a long answer stays recallable (docs/architecture.md §5c)."""

from __future__ import annotations

from dataclasses import replace

from catbuddy.config import AgentSettings
from catbuddy.context.counting.tokens import counter_for
from catbuddy.session.store import SessionStore
from catbuddy.tools.base import ToolContext
from catbuddy.tools.recall import RecallTool
from catbuddy.tools.registry import run_tool
from catbuddy.tools.task import INCOMPLETE, TaskOutcome, TaskRequest, TaskTool


class Children:
    """A Delegate that answers from a table: what the tool sees of the agent's Subagents."""

    def __init__(self, answer: str, status: str = "done", reason: str = "") -> None:
        self.answer, self.status, self.reason = answer, status, reason
        self.requests: list[TaskRequest] = []
        self.counter = counter_for("o200k_base")

    def known_agents(self) -> dict[str, str]:
        return {"explore": "read-only search", "reviewer": "reviews diffs"}

    async def run(self, request: TaskRequest) -> TaskOutcome:
        self.requests.append(request)
        return TaskOutcome(self.answer, self.status, self.reason, request.agent, "child-1", 3, 9000)

    def count(self, text: str) -> int:
        return self.counter.count_text(text)


def with_children(ctx: ToolContext, children: Children, answer_tokens: int = 2000) -> ToolContext:
    ctx.delegate = children
    ctx.settings = replace(ctx.settings, agents=AgentSettings(answer_tokens=answer_tokens))
    return ctx


async def test_a_short_answer_comes_back_whole_with_its_figures(ctx: ToolContext) -> None:
    children = Children("It is in config.py:12.")
    result = await run_tool(
        TaskTool(), {"description": "find it", "prompt": "Where?"}, with_children(ctx, children)
    )

    assert result.content == "It is in config.py:12." and not result.is_error
    assert children.requests[0].agent == "explore"  # the default agent
    info = result.meta["subagent"]
    assert info["spent_tokens"] == 9000 and info["returned_tokens"] == children.count(result.content)


async def test_a_long_answer_is_cut_and_says_where_the_rest_is(ctx: ToolContext) -> None:
    children = Children("\n".join(f"finding {i}: module_{i}.py defines helper_{i}" for i in range(2000)))
    result = await run_tool(
        TaskTool(), {"description": "d", "prompt": "p"}, with_children(ctx, children, 200)
    )

    assert children.count(result.content) <= 200 + 60  # the head, plus the note
    assert "answer cut at 200 tokens of" in result.content and "`recall` finds them" in result.content
    assert result.content.startswith("finding 0: module_0.py")


async def test_an_incomplete_child_is_marked(ctx: ToolContext) -> None:
    children = Children("found two of three", INCOMPLETE, "it reached its turn limit (20 model calls)")
    result = await run_tool(TaskTool(), {"description": "d", "prompt": "p"}, with_children(ctx, children))

    assert result.content.startswith(
        "[incomplete: it reached its turn limit (20 model calls); this is what it had]"
    )


async def test_bad_calls_are_refused_with_what_to_do(ctx: ToolContext) -> None:
    unknown = await run_tool(TaskTool(), {"description": "d", "prompt": "p", "agent": "wizard"},
                             with_children(ctx, Children("x")))  # fmt: skip
    assert (
        unknown.is_error
        and "Known agents: explore: read-only search; reviewer: reviews diffs" in unknown.content
    )
    empty = await run_tool(TaskTool(), {"description": "d", "prompt": "  "}, ctx)
    assert empty.is_error and "`prompt` is empty" in empty.content
    ctx.delegate = None
    too_deep = await run_tool(TaskTool(), {"description": "d", "prompt": "p"}, ctx)
    assert too_deep.is_error and "depth limit" in too_deep.content


async def test_recall_searches_the_sessions_subagents_too(ctx: ToolContext, tmp_path) -> None:
    sessions = tmp_path / "sessions"
    parent = SessionStore(sessions).create(ctx.work_root, "m")
    parent.append_message({"role": "user", "content": "delegate it"})
    child = SessionStore(sessions / "subagents" / parent.id).create(ctx.work_root, "m")
    child.append_message(
        {"role": "assistant", "content": "the FULL-ANSWER tail: helper_1999 lives in module_1999.py"}
    )
    ctx.sessions_dir, ctx.session_id = sessions, parent.id

    result = await run_tool(RecallTool(), {"query": "helper_1999"}, ctx)

    assert "module_1999.py" in result.content and f"session {child.id}" in result.content
    parent.close()
    child.close()
