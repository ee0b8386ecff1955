"""The path guard of the file tools: a path argument becomes a real path inside the work root (or the
global workspace the `memory` and `my` skills maintain), and a write to catbuddy's own files needs the
user's one-call grant (docs/architecture.md §8). The approval policy (safety/policy.py) resolves paths
with the same ``real_path``, so both judge the same file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from catbuddy.safety.policy import real_path
from catbuddy.safety.protected import CONFIG, HOME, SESSION, ProtectedPlaces, describe
from catbuddy.tools.base import ToolContext, ToolError


def agent_owned_paths(ctx: ToolContext) -> list[Path]:
    """Outside the work root, the files the `memory` and `my` skills tell the model to maintain:
    the global workspace (USER.md, MEMORY.md, skills/) and the global config.toml (which asks)."""
    home = ctx.workspace.home
    return [(home / "workspace").resolve(), (home / "config.toml").resolve()]


def resolve_path(ctx: ToolContext, path: Any, *, for_write: bool) -> Path:
    """The real path a file tool may use, or a ToolError saying why not.

    A write to catbuddy's own files needs a grant the approval policy put in ``ctx.grants`` for this one
    call (it is used up here); session files are never written."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError('`path` must be a non-empty string, e.g. "src/main.py" (relative to the work root).')
    root = ctx.work_root.resolve()
    try:
        resolved = real_path(path, root, ctx.workspace.home)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    allowed = [root, *agent_owned_paths(ctx)]
    if not ctx.settings.tools.allow_outside_work_root and not any(
        resolved == place or resolved.is_relative_to(place) for place in allowed
    ):
        raise ToolError(
            f"{path} resolves to {resolved}, which is outside the work root {root}. Use a path inside "
            "the work root (set `tools.allow_outside_work_root = true` in config.toml to allow others)."
        )
    if for_write:
        kind = ProtectedPlaces.of(ctx.workspace.home, root).classify(resolved)
        if kind == SESSION:
            raise ToolError(f"{path} is one of catbuddy's session files; they are never written by tools.")
        if kind in (CONFIG, HOME) and not ctx.grants.consume(resolved):
            raise ToolError(
                f"Refused: {path} is {describe(kind, resolved)}. Only the user can approve writing it, one "
                "call at a time; ask the user, or tell them what to change."
            )
    return resolved


def display_path(ctx: ToolContext, path: Path) -> str:
    """A path as the model should write it back: relative to the work root when inside it."""
    root = ctx.work_root.resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) and path != root else str(path)
