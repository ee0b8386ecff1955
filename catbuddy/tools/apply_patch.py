"""apply_patch: several file changes in Codex's patch format (tools/apply_patch_format.py), all or nothing.

Every operation is planned in memory first: paths resolved by the same guard as edit_file (inside the
work root, catbuddy's own files only with the user's grant), files read, hunks fitted. Only when all of
them fit is anything written; a write that fails part-way puts back what was already written. The
approval preview is the unified diff of every file the patch changes, computed by the same plan.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.text import diff_stat, line_count, truncate_lines, unified_diff
from catbuddy.tool_meta import Change, PathChange
from catbuddy.tools.apply_patch_format import FileOp, MissError, PatchError, apply_chunks, parse_patch
from catbuddy.tools.base import Preview, PreviewKind, Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.fileio import check_regular, write_bytes
from catbuddy.tools.files import DIFF_MAX_LINES, TextFile, closest_match, load_text
from catbuddy.tools.paths import display_path, resolve_path
from catbuddy.tools.preview import PREVIEW_MAX_LINES


@dataclass
class Planned:
    """One file's fate: its new bytes (None: deleted), what it held (None: it did not exist)."""

    path: Path
    shown: str
    before: bytes | None
    after: bytes | None
    old_text: str
    new_text: str
    change: Change


def plan_patch(patch: str, ctx: ToolContext, *, for_write: bool) -> list[Planned]:
    """Every file the patch changes, with its new content; ToolError naming the problem otherwise."""
    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        raise ToolError(f"The patch is not in the apply_patch format: {exc} Nothing was applied.") from None
    planned: dict[Path, Planned] = {}
    for op in ops:
        for item in _plan_op(op, ctx, for_write, planned):
            planned[item.path] = item
    return list(planned.values())


def _current(path: Path, shown: str, planned: dict[Path, Planned]) -> tuple[bytes | None, TextFile | None]:
    """The file as the patch's earlier operations leave it: (bytes, text) or (None, None) if absent."""
    if path in planned:
        data = planned[path].after
        if data is None:
            return None, None
        return data, TextFile(planned[path].new_text, False, False)
    info = check_regular(path, shown, "patch")
    if info is None:
        return None, None
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; apply_patch changes files. Nothing was applied.")
    file = load_text(path, shown)
    return path.read_bytes(), file


def _plan_op(op: FileOp, ctx: ToolContext, for_write: bool, planned: dict[Path, Planned]) -> list[Planned]:
    path = resolve_path(ctx, op.path, for_write=for_write)
    shown = display_path(ctx, path)
    before, file = _current(path, shown, planned)
    original = planned[path].before if path in planned else before
    if op.kind == "add":
        text = op.contents
        change = Change.MODIFIED if original is not None else Change.CREATED
        old_text = file.text if file else ""
        return [Planned(path, shown, original, text.encode("utf-8"), old_text, text, change)]
    if file is None:
        verb = "delete" if op.kind == "delete" else "update"
        raise ToolError(f"Cannot {verb} {shown}: no such file. Nothing was applied.")
    if op.kind == "delete":
        return [Planned(path, shown, original, None, file.text, "", Change.DELETED)]
    try:
        new_text = apply_chunks(file.text, op.chunks)
    except MissError as exc:
        raise ToolError(_miss_message(shown, file.text, exc)) from None
    data = file.encode(new_text)
    if op.move_to is None:
        return [Planned(path, shown, original, data, file.text, new_text, Change.MODIFIED)]
    target = resolve_path(ctx, op.move_to, for_write=for_write)
    target_shown = display_path(ctx, target)
    target_before, target_file = _current(target, target_shown, planned)
    target_original = planned[target].before if target in planned else target_before
    return [
        Planned(path, shown, original, None, file.text, "", Change.DELETED),
        Planned(
            target,
            target_shown,
            target_original,
            data,
            target_file.text if target_file else "",
            new_text,
            Change.MODIFIED if target_original is not None else Change.CREATED,
        ),
    ]


def _miss_message(shown: str, text: str, exc: MissError) -> str:
    miss = exc.miss
    if miss.missing_context:
        what = f"its context line '@@ {miss.context}'"
    else:
        what = "these lines:\n" + "\n".join(miss.wanted)
    closest = closest_match(text, "\n".join(miss.wanted))
    return (
        f"Hunk {miss.index} of the update of {shown} does not fit: the file does not contain {what}\n"
        f"{closest}\nNothing was applied. Read the file and send the patch again with its exact lines."
    )


def write_all(items: list[Planned]) -> None:
    """Write every planned change; when one fails, put back the ones already written, then raise."""
    done: list[Planned] = []
    try:
        for item in items:
            if item.after is None:
                try:
                    item.path.unlink()
                except OSError as exc:
                    raise ToolError(f"{item.shown}: cannot delete it ({exc.strerror or exc}).") from None
            else:
                try:
                    item.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise ToolError(
                        f"cannot create the folder of {item.shown} ({exc.strerror or exc})."
                    ) from None
                write_bytes(item.path, item.shown, item.after)
            done.append(item)
    except ToolError as exc:
        for item in reversed(done):
            try:
                if item.before is None:
                    item.path.unlink(missing_ok=True)
                else:
                    item.path.write_bytes(item.before)
            except OSError:
                pass
        raise ToolError(f"{exc} The files already written were put back; nothing was applied.") from None


class ApplyPatchTool(Tool):
    name = "apply_patch"
    parameters = {
        "type": "object",
        "properties": {
            "patch": {
                "type": "string",
                "description": "The whole patch, from '*** Begin Patch' to '*** End Patch'.",
            },
        },
        "required": ["patch"],
    }
    kind = ToolKind.EDIT

    def normalize_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Codex's own function tool names its one argument ``input``: accepted for ``patch``."""
        if args.get("patch") is None and isinstance(args.get("input"), str):
            args = {**args, "patch": args["input"]}
            del args["input"]
        return args

    def summary(self, args: Mapping[str, Any]) -> str:
        patch = args.get("patch")
        if not isinstance(patch, str):
            return ""
        names = [
            line.split(":", 1)[1].strip()
            for line in patch.splitlines()
            if line.strip().startswith(("*** Add File:", "*** Update File:", "*** Delete File:"))
        ]
        return ", ".join(names)[:200]

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        patch = args.get("patch")
        if not isinstance(patch, str):
            return Preview()
        try:
            items = plan_patch(patch, ctx, for_write=False)
        except ToolError:
            return Preview()
        lines = "".join(_diff(item) for item in items).splitlines(keepends=True)
        if len(lines) > PREVIEW_MAX_LINES:
            lines = lines[:PREVIEW_MAX_LINES] + [f"\n… {len(lines) - PREVIEW_MAX_LINES} more diff lines\n"]
        return Preview("".join(lines), PreviewKind.DIFF)

    def writes(self, args: Mapping[str, Any], ctx: ToolContext) -> list[Path] | None:
        patch = args.get("patch")
        if not isinstance(patch, str):
            return []
        try:
            return [item.path for item in plan_patch(patch, ctx, for_write=False)]
        except ToolError:
            return []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await asyncio.to_thread(self._apply, args, ctx)

    def _apply(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        patch = args.get("patch")
        if not isinstance(patch, str) or not patch.strip():
            raise ToolError("`patch` must be the patch text, from '*** Begin Patch' to '*** End Patch'.")
        items = plan_patch(patch, ctx, for_write=True)
        write_all(items)
        diffs = "".join(_diff(item) for item in items)
        changes = [_path_change(item) for item in items]
        listing = "\n".join(f"  {c.change.value} {c.path}" for c in changes)
        body = truncate_lines(diffs, DIFF_MAX_LINES, "Read the files to see the rest.")
        return ToolResult(
            f"Applied the patch to {len(items)} file{'s' if len(items) != 1 else ''}:\n{listing}\n\n{body}",
            display=diffs,
            meta={"files": len(items)},
            paths=changes,
        )


def _diff(item: Planned) -> str:
    return unified_diff(item.old_text, item.new_text, item.shown)


def _path_change(item: Planned) -> PathChange:
    if item.change is Change.DELETED:
        return PathChange(item.shown, Change.DELETED, 0, line_count(item.old_text))
    if item.change is Change.CREATED:
        return PathChange(item.shown, Change.CREATED, line_count(item.new_text), 0)
    return PathChange(item.shown, Change.MODIFIED, *diff_stat(_diff(item)))
