"""Where hooks act in a turn (catbuddy/hooks/runner.py runs them): before the user's message is kept
(`user_prompt_submit`), before and after each tool call (`pre_tool`, `post_tool`), and when the model is
done (`stop`). Failing or hung hooks are reported as notices; a blocking hook's stderr is the reason."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from catbuddy.agent.events import Notice
from catbuddy.agent.turn_context import TurnContext
from catbuddy.config import Settings
from catbuddy.errors import EXIT_FAILED, CatbuddyError
from catbuddy.hooks.runner import HookResult, HookRunner
from catbuddy.sandbox.environment import exec_environment
from catbuddy.tools.base import ToolResult
from catbuddy.workspace import Workspace

MAX_STOP_BLOCKS = 3  # a stop hook may send the model back this many times per turn


class PromptBlocked(CatbuddyError):
    """A `user_prompt_submit` hook refused the message; nothing was sent or kept."""

    exit_code = EXIT_FAILED


def hook_runner(workspace: Workspace, settings: Settings) -> HookRunner | None:
    if not settings.hooks:
        return None
    environment = exec_environment(
        os.environ, key_variables=settings.key_variables(), secrets=settings.held_secrets(),
        allow=settings.sandbox.env_allow,
    )  # fmt: skip
    return HookRunner(settings.hooks, workspace.work_root, environment.env)


def _report(ctx: TurnContext, result: HookResult) -> None:
    for problem in result.problems:
        ctx.bus.emit(Notice(problem, "warning"))


async def on_prompt(ctx: TurnContext, text: str) -> str:
    """The message as it goes on (with the hooks' output as context), or PromptBlocked."""
    if ctx.hooks is None or not ctx.hooks.matching("user_prompt_submit"):
        return text
    result = await ctx.hooks.run("user_prompt_submit", {"session_id": ctx.conversation.id, "prompt": text})
    _report(ctx, result)
    if result.blocked:
        raise PromptBlocked(
            f"Hook {result.blocked_by} blocked the message: {result.reason}", "Nothing was sent."
        )
    if not result.context:
        return text
    return (
        text
        + "\n\n"
        + "\n\n".join(f"<hook-context>\n{context}\n</hook-context>" for context in result.context)
    )


async def before_tool(ctx: TurnContext, name: str, args: dict[str, Any]) -> str | None:
    """The refusal the model gets when a `pre_tool` hook blocks the call, else None."""
    if ctx.hooks is None or not ctx.hooks.matching("pre_tool", name):
        return None
    result = await ctx.hooks.run(
        "pre_tool", {"session_id": ctx.conversation.id, "tool": name, "arguments": args}, name
    )
    _report(ctx, result)
    if result.blocked:
        return f"Blocked by the user's hook {result.blocked_by} (pre_tool): {result.reason}"
    return None


async def after_tool(ctx: TurnContext, name: str, args: dict[str, Any], result: ToolResult) -> ToolResult:
    """A `post_tool` hook that exits 2 adds its stderr to the result the model reads."""
    if ctx.hooks is None or not ctx.hooks.matching("post_tool", name):
        return result
    payload = {"session_id": ctx.conversation.id, "tool": name, "arguments": args, "result": result.content,
               "is_error": result.is_error}  # fmt: skip
    outcome = await ctx.hooks.run("post_tool", payload, name)
    _report(ctx, outcome)
    if outcome.blocked:
        feedback = f"\n\n[hook {outcome.blocked_by} (post_tool)]: {outcome.reason}"
        return replace(result, content=result.content + feedback)
    return result


async def on_stop(ctx: TurnContext, final_text: str, blocks_so_far: int) -> str | None:
    """The reason to go on when a `stop` hook blocks the end of the turn (at most MAX_STOP_BLOCKS times)."""
    if ctx.hooks is None or not ctx.hooks.matching("stop"):
        return None
    payload = {"session_id": ctx.conversation.id, "result": final_text, "stop_hook_active": blocks_so_far > 0}
    result = await ctx.hooks.run("stop", payload)
    _report(ctx, result)
    if not result.blocked:
        return None
    if blocks_so_far >= MAX_STOP_BLOCKS:
        ctx.bus.emit(Notice(f"Hook {result.blocked_by} blocked the end of the turn {MAX_STOP_BLOCKS} times; "
                            "the turn ends anyway.", "warning"))  # fmt: skip
        return None
    return f"[hook {result.blocked_by} (stop)]: {result.reason}"
