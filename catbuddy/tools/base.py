"""The contract every tool follows: built-in tools, the skill tool and MCP tools alike.

A tool is the one owner of what it is (docs/architecture.md §8): its name, schema and the description the
model reads (``templates/tools/<name>.md``), how it asks for approval (``preview``, ``approval_override``),
whether its old results may be stubbed (``microcompactable``), which paths a call writes (``writes``),
what a finished call tells the compaction ledger (``ledger_facts``) and front ends (``summary``,
``result_summary``). Nothing else in catbuddy names a tool: lists and per-tool behaviour come from the
registry. A new tool is one module, its description file and its tests.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from catbuddy.errors import CatbuddyError
from catbuddy.resources import templates_dir
from catbuddy.safety.kinds import ToolKind
from catbuddy.safety.protected import WriteGrants
from catbuddy.tool_meta import LedgerFact, PathChange, ToolMeta, ToolStatus, describe_outcome

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.context.compaction.plan import Plan
    from catbuddy.skills.loader import SkillCatalog
    from catbuddy.workspace import Workspace

DESCRIPTIONS_DIR = (
    "tools"  # under templates/: one <name>.md per built-in tool, the exact text the model reads
)
SUMMARY_KEYS = ("path", "command", "pattern", "url", "query", "name")
# The id of the tool call being run, set by the agent around each call (a task runs per call, so each
# concurrent call sees its own): what links a subagent's transcript to the call that started it.
CURRENT_CALL_ID: ContextVar[str] = ContextVar("catbuddy_tool_call_id", default="")


class PreviewKind(StrEnum):
    """How a front end shows an approval preview."""

    COMMAND = "command"  # a shell command line
    DIFF = "diff"  # a unified diff of what the call would change
    TEXT = "text"


@dataclass(frozen=True)
class Preview:
    """What the user sees before approving a call; empty text: the call's summary is shown instead."""

    text: str = ""
    kind: PreviewKind = PreviewKind.TEXT


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
    current_plan: Callable[[], Plan | None] | None = None  # the conversation's plan (`update_plan` reads)
    delegate: Any = None  # runs a subagent for `task` (tools/task.Delegate); None: no subagents here

    @property
    def work_root(self) -> Path:
        return self.workspace.work_root


@dataclass
class ToolResult:
    """What goes back to the model (``content``), what a front end may show besides (``display``), and
    what the call did as data: the agent turns it into the call's ``ToolMeta``."""

    content: str
    is_error: bool = False
    display: str | None = None  # e.g. the unified diff of an edit, for the UI
    meta: dict[str, Any] = field(default_factory=dict)  # tool-specific facts: ToolMeta.extra
    status: ToolStatus | None = None  # None: ERROR when is_error, else OK
    exit_code: int | None = None  # a command's
    paths: list[PathChange] = field(default_factory=list)  # files the call created, modified, deleted
    images: list[Path] = field(default_factory=list)  # images for the model, stored (MCP results: images.py)

    @property
    def outcome(self) -> ToolStatus:
        if self.status is not None:
            return self.status
        return ToolStatus.ERROR if self.is_error else ToolStatus.OK


class ToolError(CatbuddyError):
    """Raised inside a tool for a problem the model should read and fix (bad path, no match, …)."""


@cache
def shipped_description(name: str) -> str:
    """``templates/tools/<name>.md``, byte for byte what the model reads (the file's final newline is not
    part of it): the schemas are the start of every request's cached prefix."""
    path = templates_dir() / DESCRIPTIONS_DIR / f"{name}.md"
    try:
        return path.read_text(encoding="utf-8").removesuffix("\n")
    except OSError:
        raise FileNotFoundError(
            f"the description of the `{name}` tool ({path}) is missing; reinstall catbuddy"
        ) from None


class ShippedDescription:
    """A tool's ``description`` when the class does not set one: its ``templates/tools/<name>.md``, read on
    first use (a tool that sets ``description`` itself, as MCP tools do, shadows this)."""

    def __get__(self, instance: object, owner: type[Tool]) -> str:
        return shipped_description(owner.name)


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str] = ShippedDescription()  # type: ignore[assignment]  # a str on every class
    parameters: ClassVar[dict[str, Any]]
    kind: ClassVar[ToolKind] = ToolKind.READ
    # Old results may be stubbed by microcompaction (docs/architecture.md §4): bulky output rarely needed
    # verbatim later. Off for edits (their diffs are the record of a change), skills (a body read once must
    # stay readable, nanobot #3846) and MCP tools.
    microcompactable: ClassVar[bool] = False
    # The user's per-tool approval setting ("ask", "auto" or "deny"; MCP servers' `approval`), which the
    # approval policy (safety/policy.py) applies on top of the mode.
    approval_override: str | None = None

    @property
    def read_only(self) -> bool:
        """Read-only calls may run concurrently with each other."""
        return self.kind in (ToolKind.READ, ToolKind.NETWORK)

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    # --- what front ends show ---------------------------------------------------------------------

    def summary(self, args: Mapping[str, Any]) -> str:
        """The key argument, one line, for a compact display of the call (also while it runs)."""
        for key in SUMMARY_KEYS:
            if key in args:
                return str(args[key])[:200]
        return ""

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        """One line about what a finished call did ("exit 1", "modified a.py +3 −1", "refused"), stored
        with the result so a resumed session shows what the live one did."""
        return describe_outcome(meta)

    def normalize_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments as the tool reads them, before approval sees them: an alias another
        agent's tool uses (``file_path``) becomes the key the approval policy checks (``path``)."""
        return args

    def preview(self, args: Mapping[str, Any], ctx: ToolContext) -> Preview:
        """What the approval dialog shows (blocking: called in a thread). Paths must resolve exactly as the
        call will, so the preview shows what the user approves; nothing useful: an empty preview."""
        return Preview()

    # --- what a call changes and what it leaves for the ledger --------------------------------------

    def writes(self, args: Mapping[str, Any], ctx: ToolContext) -> list[Path] | None:
        """The files a call will write, resolved, before it runs (memory versions, checkpoints);
        None when that cannot be told (a command, a remote tool)."""
        return [] if self.read_only else None

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        """What a finished call tells the compaction ledger beyond its status and the paths it changed
        (``meta.paths``), which the ledger takes from every call. Called for refused calls too."""
        return []

    @abstractmethod
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work. Raise ToolError for problems the model should see; never crash the loop."""
