"""The `skill` tool: loads an on-demand skill's instructions (and its bundled files) into the conversation.

The system prompt lists on-demand skills one line each (docs/architecture.md §2, layer 4); their bodies reach the model
only through this tool. Bundled files are listed with the skill's absolute folder, and can be read
through this tool too (``file``), because shipped and global skills live outside the work root where
``read_file`` may not reach.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.skills.loader import SKILL_FILE, Skill, SkillCatalog, discover_skills
from catbuddy.tool_meta import FactKind, LedgerFact, ToolMeta, ToolStatus
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult

MAX_BODY_CHARS = 40_000  # skill results are never compacted, so a runaway SKILL.md must not fill the window
MAX_FILE_CHARS = 60_000
MAX_LISTED_SUGGESTIONS = 3


class SkillTool(Tool):
    name = "skill"
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, e.g. 'drawio'."},
            "file": {
                "type": "string",
                "description": "Optional: a bundled file of the skill to read, relative to its folder "
                "(e.g. 'references/example.drawio'). Omit to load the skill's instructions.",
            },
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    kind = ToolKind.READ

    def summary(self, args: Mapping[str, Any]) -> str:
        name = str(args.get("name", ""))
        return f"{name}/{args['file']}" if args.get("file") else name

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        name = args.get("name")
        if meta.status is not ToolStatus.OK or not isinstance(name, str) or not name.strip():
            return []
        file = args.get("file")
        return [
            LedgerFact(FactKind.SKILL, name.strip() + (f"/{file}" if isinstance(file, str) and file else ""))
        ]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        catalog = ctx.skills if ctx.skills is not None else discover_skills(ctx.workspace)
        skill = _find(catalog, args.get("name"))
        file = args.get("file")
        if file:
            if not isinstance(file, str):
                raise ToolError(
                    "`file` must be a path relative to the skill's folder, as listed by the skill."
                )
            return _read_bundled(skill, file)
        return _load(skill)


def _find(catalog: SkillCatalog, raw_name: Any) -> Skill:
    if not isinstance(raw_name, str) or not raw_name.strip():
        raise ToolError(f"`name` is required: one of {_available(catalog)}.")
    name = raw_name.strip().lstrip("/").lower()  # models sometimes write "/drawio" or "DrawIO"
    skill = catalog.get(name)
    if skill is not None:
        return skill
    close = difflib.get_close_matches(name, catalog.names(), n=MAX_LISTED_SUGGESTIONS, cutoff=0.5)
    hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ToolError(f"Unknown skill {raw_name!r}.{hint} Available skills: {_available(catalog)}.")


def _available(catalog: SkillCatalog) -> str:
    return ", ".join(catalog.names()) or "(none installed)"


def _load(skill: Skill) -> ToolResult:
    body = skill.body
    truncated = len(body) > MAX_BODY_CHARS
    if truncated:
        body = body[:MAX_BODY_CHARS]
    parts = [f"# Skill: {skill.name}", f"Directory: {skill.directory}", "", body.strip()]
    if truncated:
        parts.append(
            f"\n[The instructions were cut at {MAX_BODY_CHARS} characters; "
            f"read the rest with skill(name={skill.name!r}, file={SKILL_FILE!r}).]"
        )
    files = skill.bundled_files()
    if files:
        parts += [
            "",
            f"## Bundled files (in {skill.directory}; read one with skill(name={skill.name!r}, file=...))",
            *(f"- {path}" for path in files),
        ]
    return ToolResult(
        content="\n".join(parts),
        display=f"loaded skill {skill.name} ({skill.source}, {len(files)} bundled files)",
        meta={"skill": skill.name, "source": skill.source, "path": str(skill.path)},
    )


def _read_bundled(skill: Skill, relative: str) -> ToolResult:
    directory = skill.directory.resolve()
    target = (directory / relative).resolve()
    if not target.is_relative_to(directory):
        raise ToolError(f"{relative!r} is outside the skill's folder; use a path listed by the skill.")
    if not target.is_file():
        listed = ", ".join(skill.bundled_files()) or "none"
        raise ToolError(f"Skill {skill.name!r} has no file {relative!r}. Its files: {listed}.")
    try:
        text = target.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{relative!r} is not a text file; its path is {target}.") from exc
    except OSError as exc:
        raise ToolError(f"Cannot read {target}: {exc.strerror or exc}") from exc
    note = ""
    if len(text) > MAX_FILE_CHARS:
        text = text[:MAX_FILE_CHARS]
        note = f"\n[cut at {MAX_FILE_CHARS} characters]"
    header = f"# Skill file: {skill.name}/{Path(relative).as_posix()}\nPath: {target}\n\n"
    return ToolResult(
        content=header + text + note,
        display=f"read {skill.name}/{relative}",
        meta={"skill": skill.name, "file": str(target)},
    )
