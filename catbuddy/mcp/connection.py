"""One MCP server's connection, kept alive in its own long-lived task.

The SDK's transports and ``ClientSession`` are anyio async context managers: they must be entered and
left in the same task. So each server has a runner task that opens the transport and the session,
lists the tools, marks itself connected, then sleeps until it is stopped or the connection is lost;
leaving the ``async with`` then shuts the server down (for stdio: close stdin, then terminate the
process group). Calls come from other tasks and go straight through the session, which the SDK
allows: requests are matched to responses by id, whoever sends them.

``mcp`` is imported only inside the runner, so loading catbuddy never loads the SDK.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.mcp.sdk import (
    SessionExpired,
    describe,
    import_sdk,
    is_connection_error,
    is_session_expired,
    leaf,
    list_tools,
    notification_method,
    open_session,
)
from catbuddy.mcp.stderr_tail import StderrTail
from catbuddy.tools.base import ToolError

if TYPE_CHECKING:
    from catbuddy.config import McpServerSettings

log = logging.getLogger(__name__)

STOP_TIMEOUT = 8.0  # the SDK's own stdio shutdown is bounded at about 6 s (stdin close, TERM, KILL)

STATES = ("connecting", "connected", "failed", "disconnected", "disabled")


class ServerConnection:
    """State and session of one configured server. All methods run in the agent's event loop."""

    def __init__(self, settings: McpServerSettings, work_root: Path, on_change: Callable[[], None]) -> None:
        self.settings = settings
        self.work_root = work_root
        self._on_change = on_change
        self.state = "disabled" if settings.disabled else "connecting"
        self.error = ""
        self.remote_tools: list[dict[str, Any]] = []  # wire-shape tools/list entries of the last connect
        self.stderr: StderrTail | None = None
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._lost_reason = ""
        self._relist = False
        self._startup_scope: Any = None
        self._reconnect_lock = asyncio.Lock()

    # --- facts ------------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def transport(self) -> str:
        return "stdio" if self.settings.command else "http"

    @property
    def target(self) -> str:
        if self.settings.command:
            return " ".join([self.settings.command, *self.settings.args])
        return self.settings.url

    @property
    def stopped(self) -> bool:
        """Stopped by us (``stop()``), as opposed to failed or lost."""
        return self._stopping

    def stderr_tail(self) -> str:
        return self.stderr.tail() if self.stderr is not None else ""

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Launch the runner task; returns at once. The state says how it went (``wait_settled``)."""
        if self.settings.disabled or (self._task is not None and not self._task.done()):
            return
        self._settled.clear()
        self._wake.clear()
        self._stopping = False
        self._lost_reason = ""
        self._relist = False
        self._set_state("connecting", "")
        self._task = asyncio.create_task(self._run(), name=f"mcp-server:{self.name}")

    async def wait_settled(self) -> None:
        if self._task is not None and not self.settings.disabled:
            await self._settled.wait()

    async def stop(self) -> None:
        """Shut the server down and wait for it (bounded); a stdio child is terminated, never left."""
        self._stopping = True
        self._wake.set()
        if self._startup_scope is not None:
            self._startup_scope.cancel()
        task = self._task
        if task is None or task.done():
            return
        done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        if not done:  # last resort; the SDK's shutdown is shielded and normally finishes well before
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _wound_down(self) -> None:
        """Wait for a runner that lost its connection to finish closing it, before starting anew."""
        task = self._task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=STOP_TIMEOUT)

    def mark_lost(self, reason: str) -> None:
        """The connection is gone (process exited, transport closed). The runner winds it down."""
        if self.state == "connected" and not self._lost_reason and not self._stopping:
            self._lost_reason = reason
            self._wake.set()
            self._set_state("disconnected", f"{reason}; it will be restarted on next use")

    def _set_state(self, state: str, error: str) -> None:
        changed = (state, error) != (self.state, self.error)
        self.state, self.error = state, error
        if changed:
            try:
                self._on_change()
            except Exception:  # a listener's bug must not take the connection down
                log.exception("MCP change listener failed")

    # --- the runner task --------------------------------------------------------------------------

    async def _run(self) -> None:
        await import_sdk()
        import anyio

        if self._stopping:  # stopped while the SDK was loading
            self._finish(False, None)
            return

        failure: BaseException | None = None
        connected = False
        stderr = (
            StderrTail(on_eof=lambda: self.mark_lost("the server process exited"))
            if self.settings.command
            else None
        )
        self.stderr = stderr
        # A cancel scope, not fail_after: when the deadline cancels `initialize`, the SDK may surface
        # that as "connection closed" rather than as the cancellation, so the scope is asked instead.
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.settings.startup_timeout)
        self._startup_scope = scope
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    self._session = await open_session(
                        stack, self.settings, self.work_root, stderr, self._on_message
                    )
                    self.remote_tools = await list_tools(self._session)
                    # Started: from here on only stop() or a lost connection ends the block.
                    scope.deadline = math.inf
                    self._startup_scope = None
                    connected = True
                    self._set_state("connected", "")
                    self._settled.set()
                    await self._serve()
                    self._session = None
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 — reported as the failure, never raised into the loop
            failure = leaf(exc)
        finally:
            self._session = None
            self._startup_scope = None
            if scope.cancel_called and not connected and not self._stopping:
                failure = TimeoutError(
                    f"did not finish starting within {self.settings.startup_timeout:g} s "
                    f"(raise `startup_timeout` in mcpServers.{self.name} if it is just slow)"
                )
            if stderr is not None:
                await stderr.wait_eof()  # collect the last lines of a server that just died
                stderr.close()
            self._finish(connected, failure)

    def _finish(self, connected: bool, failure: BaseException | None) -> None:
        if self._stopping:
            self._set_state("disconnected" if connected else "failed", "stopped")
        elif connected:
            reason = self._lost_reason or (describe(failure) if failure else "the connection closed")
            self._set_state("disconnected", f"{reason}; it will be restarted on next use")
        else:
            self._set_state("failed", self._startup_error(failure))
        self._settled.set()

    def _startup_error(self, failure: BaseException | None) -> str:
        if isinstance(failure, TimeoutError):  # before OSError: TimeoutError is one
            return str(failure)
        if isinstance(failure, FileNotFoundError):
            return f"command not found: {self.settings.command!r} (check `command` in mcpServers.{self.name})"
        if isinstance(failure, PermissionError):
            return f"cannot run {self.settings.command!r}: permission denied"
        if failure is not None and is_connection_error(failure):
            if self.transport == "stdio":
                return "the server exited during start-up"
            return f"cannot reach {self.settings.url}: {describe(failure)}"
        return (
            str(failure)
            if isinstance(failure, TimeoutError)
            else describe(failure or RuntimeError("unknown"))
        )

    async def _serve(self) -> None:
        """Sleep until stopped or lost; re-list tools when the server says they changed."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping or self._lost_reason:
                return
            if self._relist:
                self._relist = False
                await self._refresh_tools()

    async def _refresh_tools(self) -> None:
        import anyio

        try:
            with anyio.fail_after(self.settings.call_timeout):
                tools = await list_tools(self._session)
        except Exception as exc:
            if is_connection_error(exc):
                self.mark_lost("the connection closed")
            log.warning("MCP server %s: re-listing tools failed: %s", self.name, describe(exc))
            return
        if tools != self.remote_tools:
            self.remote_tools = tools
            self._on_change()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.debug("MCP server %s: transport error: %s", self.name, describe(message))
            return
        if notification_method(message) == "notifications/tools/list_changed":
            self._relist = True
            self._wake.set()

    # --- calls ------------------------------------------------------------------------------------

    async def ensure_connected(self) -> None:
        """Connected, after at most one (re)connect attempt; otherwise a ToolError saying why."""
        if self.settings.disabled:
            raise ToolError(f"MCP server '{self.name}' is disabled in the configuration.")
        async with self._reconnect_lock:
            if self.state in ("disconnected", "failed"):
                await self._wound_down()
                self.start()
            await self.wait_settled()
        if self.state != "connected" or self._session is None:
            raise ToolError(self.down_message())

    def down_message(self) -> str:
        text = f"MCP server '{self.name}' is down: {self.error or self.state}."
        tail = self.stderr_tail()
        return f"{text}\nLast lines of its stderr:\n{tail}" if tail else text

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call one remote tool; the wire-shape CallToolResult, or ToolError for timeouts and failures.

        A server that is known to be down is restarted first (one attempt). An HTTP server that no
        longer knows our session (it restarted) refused the call without running it, so the call is
        retried once on a fresh session.
        """
        for attempt in range(2):
            await self.ensure_connected()
            try:
                return await self._call_once(tool, arguments)
            except SessionExpired as exc:
                self.mark_lost("the server no longer knows the session (it probably restarted)")
                if attempt:
                    raise ToolError(f"MCP server '{self.name}' refused the call to '{tool}': {exc}") from None
        raise AssertionError("unreachable")

    async def _call_once(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        import anyio

        session = self._session
        timeout = self.settings.call_timeout
        try:
            with anyio.fail_after(timeout):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(
                f"MCP tool '{tool}' on server '{self.name}' timed out after {timeout:g} s "
                f"(raise `call_timeout` in mcpServers.{self.name} if it needs longer)."
            ) from None
        except Exception as exc:
            if is_session_expired(exc):
                raise SessionExpired(describe(exc)) from None
            if not is_connection_error(exc):
                raise ToolError(
                    f"MCP server '{self.name}' refused the call to '{tool}': {describe(exc)}"
                ) from None
            self.mark_lost("the connection closed during a call")
            if self.stderr is not None:
                await self.stderr.wait_eof()
            text = (
                f"MCP server '{self.name}' disconnected during the call to '{tool}' (it may have crashed; "
                "the call may or may not have taken effect). It will be restarted on next use."
            )
            tail = self.stderr_tail()
            raise ToolError(f"{text}\nLast lines of its stderr:\n{tail}" if tail else text) from None
        data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data
