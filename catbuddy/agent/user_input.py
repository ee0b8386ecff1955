"""The user's message as sent: the text, then what its @-mentions attach, then the runtime block; images as
``image_url`` parts (references to the copy in the catbuddy home, see images.py).

Files are read by the real `read_file` and folders listed by `list_dir`, so an attachment is bounded
exactly as those tools are. A mention outside the work root asks first, like a read outside it would; with
nobody to ask (headless) it stays plain text and a notice says why. Images for a model that does not take
them are refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from catbuddy.agent.events import ApprovalChoice, ApprovalRequested, ApprovalResolved, Notice
from catbuddy.agent.turn_context import TurnContext
from catbuddy.errors import CatbuddyError
from catbuddy.images import ImageError, StoredImage, read_image, store_image, supports_vision
from catbuddy.mentions.parse import Mention, find_mentions
from catbuddy.tools.base import ToolContext
from catbuddy.tools.files import ReadFileTool
from catbuddy.tools.list_dir import ListDirTool

MENTION_READ = "mention"  # the approval request's tool name: reading a mentioned file
LIST_DEPTH = 2
_ids = itertools.count(1)


async def user_message(ctx: TurnContext, text: str, images: Sequence[Path] = ()) -> dict[str, Any]:
    """The message to append for ``text`` (``images``: given on the command line, already consented to)."""
    mentions = await asyncio.to_thread(find_mentions, text, ctx.workspace.work_root)
    sections: list[str] = []
    stored: list[StoredImage] = []
    for mention in mentions:
        if not mention.inside and not await _may_read_outside(ctx, mention):
            continue
        if mention.is_image:
            stored.append(await _store(ctx, mention.path, mention.name))
            sections.append(f'<image path="{mention.name}">attached below</image>')
        else:
            sections.append(await _attachment(ctx, mention))
    for path in images:
        stored.append(await _store(ctx, path, str(path)))
    if stored:
        check_vision(ctx, len(stored))
    body = text + ("\n\n" + "\n\n".join(sections) if sections else "")
    message = ctx.builder.user_message(body, ctx.channel)
    if stored:
        message["content"] = [
            {"type": "text", "text": message["content"]},
            *(image.part() for image in stored),
        ]
    return message


def check_vision(ctx: TurnContext, count: int) -> None:
    configured = ctx.settings.model_spec(ctx.model).vision
    if not supports_vision(ctx.model, configured):
        raise ImageError(
            f"{ctx.model} does not accept images; nothing was sent ({count} image{'s' if count > 1 else ''} attached)",
            f'Switch to a model that does (/model or --model), or set vision = true under [models."{ctx.model}"] '
            "in config.toml if it does.",
        )


async def _store(ctx: TurnContext, path: Path, shown: str) -> StoredImage:
    def load() -> StoredImage:
        data, mime = read_image(path, shown)
        return store_image(ctx.workspace.home, data, mime)

    return await asyncio.to_thread(load)


async def _attachment(ctx: TurnContext, mention: Mention) -> str:
    tools = ctx.tools
    if not mention.inside:  # approved: this one read may leave the work root
        tools = ToolContext(
            ctx.workspace,
            replace(ctx.settings, tools=replace(ctx.settings.tools, allow_outside_work_root=True)),
            sessions_dir=ctx.tools.sessions_dir,
        )
    tag = "directory" if mention.is_dir else "file"
    try:
        if mention.is_dir:
            result = await ListDirTool().run({"path": str(mention.path), "depth": LIST_DEPTH}, tools)
        else:
            result = await ReadFileTool().run({"path": str(mention.path)}, tools)
        body = result.content
    except CatbuddyError as exc:  # binary, unreadable: said in the attachment, never fatal
        body = f"[not attached: {exc}]"
    return f'<{tag} path="{mention.name}">\n{body}\n</{tag}>'


async def _may_read_outside(ctx: TurnContext, mention: Mention) -> bool:
    """Like a read outside the work root: allowed by config, or asked; headless, refused with a notice."""
    if ctx.settings.tools.allow_outside_work_root:
        return True
    call_id = f"mention-{next(_ids)}"
    arguments = {"path": str(mention.path)}
    reason = f"the message mentions {mention.path}, outside the work root {ctx.workspace.work_root}"
    if ctx.interactive:
        ctx.approvals.expect(call_id)
    ctx.bus.emit(
        ApprovalRequested(
            call_id,
            MENTION_READ,
            arguments,
            f"attach {mention.path}",
            reason=reason,
            answerable=ctx.interactive,
        )
    )
    if not ctx.interactive:
        ctx.bus.emit(ApprovalResolved(call_id, MENTION_READ, "refused_headless"))
        ctx.bus.emit(
            Notice(
                f"{mention.token} was not attached: it is outside the work root and nobody can approve reading "
                "it here. Copy it into the work root, or set tools.allow_outside_work_root = true.",
                "warning",
            )
        )
        return False
    answer = await ctx.approvals.wait(call_id)
    ctx.bus.emit(ApprovalResolved(call_id, MENTION_READ, answer.choice.value, answer.note))
    return answer.choice in (ApprovalChoice.ALLOW_ONCE, ApprovalChoice.ALLOW_SESSION)
