"""What a tool does and what the approval policy reads of it: its name, its kind and the user's per-tool
approval setting.

Every tool declares its kind (``Tool.kind``, tools/base.py); the policy reads a tool through
``ApprovalSubject``, so safety never imports the tools it rules on (docs/architecture.md §1, §8).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class ToolKind(StrEnum):
    """What a tool does, which decides whether it needs approval."""

    READ = "read"  # reads files or searches: never asks
    EDIT = "edit"  # writes files: asks in `ask` mode
    EXEC = "exec"  # runs commands: asks in `ask` and `auto-edit` modes
    NETWORK = "network"  # fetches from the web: read-only, never asks
    EXTERNAL = "external"  # MCP tools: follow the server's approval setting


class ApprovalSubject(Protocol):
    """What the approval policy reads of a tool: a ``Tool`` (tools/base.py) is one."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> ToolKind: ...

    @property
    def approval_override(self) -> str | None:
        """The user's per-tool setting ("ask", "auto" or "deny"), None when there is none."""
        ...
