"""Versioning the model's own writes to a MEMORY.md (write_file / edit_file, approved and about to run).

The target is resolved with ``tools/paths.resolve_path``, the resolver the tool itself uses, so a
relative path, ``~/.catbuddy/...`` or a symlink all land on the same file.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from catbuddy.memory.paths import MemoryPaths
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.paths import resolve_path

if TYPE_CHECKING:
    from catbuddy.memory.versions import PendingWrite

log = logging.getLogger(__name__)

WRITING_TOOLS = frozenset({"write_file", "edit_file"})


def begin_tool_write(
    ctx: ToolContext, tool: str, args: dict[str, Any], session_id: str
) -> PendingWrite | None:
    """Keep the previous version of the MEMORY.md this call writes; None for any other call."""
    if tool not in WRITING_TOOLS:
        return None
    try:
        # for_write=False: the same path, without using up a one-use grant the tool itself needs
        path = resolve_path(ctx, args.get("path"), for_write=False)
    except ToolError:
        return None  # the tool will refuse the path itself
    # Imported at the first file write, not with the loop: the version log costs ~5 ms at start-up.
    from catbuddy.memory.versions import MemoryVersions

    try:
        return MemoryVersions(MemoryPaths.of(ctx.workspace)).begin(
            path, source=f"tool:{tool}", sessions=(session_id,) if session_id else ()
        )
    except OSError as exc:  # versioning must never stop the write the user approved
        log.warning("cannot keep the previous version of %s: %s", path, exc)
        return None


def finish_tool_write(pending: PendingWrite | None) -> None:
    if pending is None:
        return
    try:
        pending.finish()
    except OSError as exc:
        log.warning("cannot log the memory write: %s", exc)
