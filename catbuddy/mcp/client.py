"""The MCP client: every configured server, connected in the background, its tools as catbuddy tools.

``McpManager.start()`` returns at once; servers connect on their own (start-up timeout per server) and
listeners registered with ``on_change`` hear about every connect, failure and drop, so the agent can
refresh its tool registry. A server that fails is reported with its stderr tail and the rest keep
working; a server that dies is reported and restarted on the next call to one of its tools.

Layer 5 of the system prompt comes from ``runtime_lines()`` and its cache key from
``runtime_fingerprint()``. Importing this module does not import the ``mcp`` SDK.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.mcp.connection import ServerConnection
from catbuddy.mcp.tool import McpTool, make_mcp_tool
from catbuddy.tools.base import ToolError

if TYPE_CHECKING:
    from catbuddy.config import McpServerSettings

log = logging.getLogger(__name__)

STATUS_TAIL_LINES = 5  # stderr lines shown per failed server in `catbuddy mcp list`


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: str  # "connecting" | "connected" | "failed" | "disconnected" | "disabled"
    tools: list[str] = field(default_factory=list)  # catbuddy names: mcp__<server>__<tool>
    error: str = ""
    stderr_tail: str = ""
    transport: str = "stdio"  # "stdio" | "http"
    target: str = ""  # the command line or the URL

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class McpManager:
    """All MCP servers of one agent. Use from the agent's event loop only."""

    def __init__(self, servers: Mapping[str, McpServerSettings], work_root: Path) -> None:
        self.work_root = work_root
        self._connections = {
            name: ServerConnection(settings, work_root, self._changed) for name, settings in servers.items()
        }
        self._listeners: list[Callable[[], None]] = []
        self._tools: list[McpTool] | None = None  # rebuilt lazily after a change

    # --- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Launch a connection task per enabled server and return without waiting for any."""
        for connection in self._connections.values():
            connection.start()

    async def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait until every server is connected or has failed. False if ``timeout`` ran out first."""
        waits = [c.wait_settled() for c in self._connections.values()]
        if not waits:
            return True
        try:
            await asyncio.wait_for(asyncio.gather(*waits), timeout)
        except TimeoutError:
            return False
        return True

    async def aclose(self) -> None:
        """Stop every server (stdio children are terminated) and wait for them."""
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- listeners --------------------------------------------------------------------------------

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` whenever a server connects, fails, drops or changes its tools.

        Returns a function that removes the listener.
        """
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    def _changed(self) -> None:
        self._tools = None
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # one listener's bug must not stop the others
                log.exception("MCP change listener failed")

    # --- what the agent sees ----------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        tools_by_server: dict[str, list[str]] = {}
        for tool in self.tools():
            tools_by_server.setdefault(tool.server, []).append(tool.name)
        return [
            ServerStatus(
                name=c.name,
                state=c.state,
                tools=tools_by_server.get(c.name, []) if c.state == "connected" else [],
                error=c.error,
                stderr_tail=c.stderr_tail()
                if c.state in ("failed", "disconnected") and not c.stopped
                else "",
                transport=c.transport,
                target=c.target,
            )
            for c in self._connections.values()
        ]

    def tools(self) -> list[McpTool]:
        """One tool per remote tool of every server that has connected.

        A server that died keeps its tools: calling one is what restarts it.
        """
        if self._tools is None:
            built: list[McpTool] = []
            taken: set[str] = set()
            for c in self._connections.values():
                if c.state == "disabled":
                    continue
                for remote in c.remote_tools:
                    tool = make_mcp_tool(self, c.settings, remote, taken)
                    taken.add(tool.name)
                    built.append(tool)
            self._tools = built
        return list(self._tools)

    def runtime_lines(self) -> list[str]:
        """Layer 5: one line per server whose tools the model has, naming those tools."""
        by_server: dict[str, list[str]] = {}
        for tool in self.tools():
            by_server.setdefault(tool.server, []).append(tool.name)
        return [f"- MCP server {name}: tools {', '.join(names)}" for name, names in by_server.items()]

    def runtime_fingerprint(self) -> str:
        """Changes exactly when ``runtime_lines()`` does; empty when no server has tools."""
        lines = self.runtime_lines()
        if not lines:
            return ""
        return hashlib.sha1("\n".join(lines).encode()).hexdigest()[:16]

    # --- calls ------------------------------------------------------------------------------------

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool`` on ``server``; the wire-shape result. ToolError when it cannot be done."""
        connection = self._connections.get(server)
        if connection is None:
            raise ToolError(f"No MCP server named '{server}' is configured.")
        return await connection.call(tool, arguments)

    def connection(self, name: str) -> ServerConnection:
        return self._connections[name]


def format_mcp_status(statuses: list[ServerStatus]) -> str:
    """The table `catbuddy mcp list` prints: server, transport, status, tools, and what went wrong."""
    if not statuses:
        return "No MCP servers configured (add them under [mcpServers.<name>] in config.toml)."
    width = max(len(s.name) for s in statuses)
    lines: list[str] = []
    for s in statuses:
        tools = f"{len(s.tools)} tool{'s' if len(s.tools) != 1 else ''}" if s.state == "connected" else ""
        lines.append(f"{s.name:<{width}}  {s.transport:<5}  {s.state:<12}  {tools}".rstrip())
        indent = " " * (width + 2)
        if s.target:
            lines.append(f"{indent}{s.target}")
        if s.tools:
            lines.append(f"{indent}tools: {', '.join(s.tools)}")
        if s.error and s.state != "connected":
            lines.append(f"{indent}error: {s.error}")
        if s.stderr_tail:
            tail = s.stderr_tail.splitlines()[-STATUS_TAIL_LINES:]
            lines.append(f"{indent}stderr:")
            lines.extend(f"{indent}  {line}" for line in tail)
    return "\n".join(lines)
