"""The contract every tool follows: built-in tools, the skill tool and MCP tools alike."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from catbuddy.errors import CatbuddyError
from catbuddy.safety.kinds import ToolKind
from catbuddy.safety.protected import WriteGrants

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.skills.loader import SkillCatalog
    from catbuddy.workspace import Workspace


@dataclass
class ToolContext:
    """What a running tool may use. One per agent; tools must not keep state in it between calls."""

    workspace: Workspace
    settings: Settings
    skills: SkillCatalog | None = None
    # One-use permissions to write catbuddy's own files, put here when the user approves such a call.
    grants: WriteGrants = field(default_factory=WriteGrants)
    sessions_dir: Path | None = None  # this project's session files (`recall` searches them)
    session_id: str | None = None  # the open session; set by the agent loop when it changes

    @property
    def work_root(self) -> Path:
        return self.workspace.work_root


@dataclass
class ToolResult:
    """What goes back to the model (``content``) and what a front end may show besides (``display``)."""

    content: str
    is_error: bool = False
    display: str | None = None  # e.g. the unified diff of an edit, for the UI
    meta: dict[str, Any] = field(default_factory=dict)


class ToolError(CatbuddyError):
    """Raised inside a tool for a problem the model should read and fix (bad path, no match, …)."""


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    kind: ClassVar[ToolKind] = ToolKind.READ

    @property
    def read_only(self) -> bool:
        """Read-only calls may run concurrently with each other."""
        return self.kind in (ToolKind.READ, ToolKind.NETWORK)

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def summary(self, args: Mapping[str, Any]) -> str:
        """The key argument, one line, for a compact display of the call."""
        for key in ("path", "command", "pattern", "url", "query", "name"):
            if key in args:
                return str(args[key])[:200]
        return ""

    @abstractmethod
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work. Raise ToolError for problems the model should see; never crash the loop."""
