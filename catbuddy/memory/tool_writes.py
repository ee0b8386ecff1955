"""Versioning the model's own writes to a MEMORY.md (an approved call about to run).

The files a call writes come from the tool itself (``Tool.writes``, resolved with ``tools/paths.
resolve_path`` as the tool will resolve them), so a relative path, ``~/.catbuddy/...`` or a symlink all
land on the same file, and a new tool that writes files is covered without being named here.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from catbuddy.memory.paths import MemoryPaths
from catbuddy.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from catbuddy.memory.versions import PendingWrite

log = logging.getLogger(__name__)


def begin_tool_write(
    ctx: ToolContext, tool: Tool, args: dict[str, Any], session_id: str
) -> list[PendingWrite]:
    """Keep the previous version of each MEMORY.md this call writes; [] when it writes none."""
    paths = tool.writes(args, ctx) or []
    if not paths:
        return []
    # Imported at the first file write, not with the loop: the version log costs ~5 ms at start-up.
    from catbuddy.memory.versions import MemoryVersions

    versions = MemoryVersions(MemoryPaths.of(ctx.workspace))
    pending: list[PendingWrite] = []
    for path in paths:
        try:
            started = versions.begin(
                path, source=f"tool:{tool.name}", sessions=(session_id,) if session_id else ()
            )
        except OSError as exc:  # versioning must never stop the write the user approved
            log.warning("cannot keep the previous version of %s: %s", path, exc)
            continue
        if started is not None:
            pending.append(started)
    return pending


def finish_tool_write(pending: list[PendingWrite]) -> None:
    for write in pending:
        try:
            write.finish()
        except OSError as exc:
            log.warning("cannot log the memory write: %s", exc)
