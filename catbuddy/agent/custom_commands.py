"""A turn started by a custom slash command (catbuddy/commands/custom.py): its prompt, and the model and
tools it asks for, which a project's command gets only in a trusted project."""

from __future__ import annotations

from catbuddy.commands.custom import CommandCatalog, Invocation, allows, discover, invocation
from catbuddy.config import Settings
from catbuddy.tools.registry import ToolRegistry
from catbuddy.trust import load_decisions
from catbuddy.workspace import Workspace


def custom_catalog(workspace: Workspace, reserved: frozenset[str] = frozenset()) -> CommandCatalog:
    return discover(workspace.work_root, workspace.home, reserved)


def project_trusted(workspace: Workspace, settings: Settings) -> bool:
    """The project's risky settings are trusted (or, with none, the user trusted this work root)."""
    if settings.project_trust is not None:
        return settings.project_trust.applied
    decision = load_decisions(workspace.home).get(str(workspace.work_root.resolve()))
    return bool(decision and decision.get("trusted") is True)


def custom_invocation(workspace: Workspace, settings: Settings, text: str) -> Invocation | None:
    if not text.lstrip().startswith("/"):
        return None  # the common case: no folder is read
    catalog = custom_catalog(workspace)
    if not catalog.commands:
        return None
    return invocation(catalog, text, project_trusted=project_trusted(workspace, settings))


def restricted(registry: ToolRegistry, names: tuple[str, ...]) -> ToolRegistry:
    """Only the tools a command allows (names that are no tool here are ignored)."""
    return ToolRegistry([tool for tool in registry if allows(names, tool.name, tool.kind)])
