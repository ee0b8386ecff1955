"""Glue to the ``mcp`` SDK: opening a session over stdio or streamable HTTP, listing tools, and reading
its errors. Everything that knows the SDK's names lives here, and imports ``mcp`` only inside the
functions that run when a server starts.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.errors import CatbuddyError

if TYPE_CHECKING:
    from catbuddy.config import McpServerSettings
    from catbuddy.mcp.stderr_tail import StderrTail

CONNECTION_CLOSED = -32000  # JSON-RPC code the SDK gives pending requests when the transport closes
MAX_TOOL_PAGES = 50  # a server whose tools/list never ends must not hang start-up
CLIENT_NAME = "catbuddy"

MessageHandler = Callable[[Any], Awaitable[None]]  # server notifications and transport errors

# The SDK takes over a second to import; done in a thread so the TUI keeps drawing meanwhile.
SDK_MODULES = (
    "mcp",
    "mcp.types",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.shared._httpx_utils",
)


def _import_sdk_modules() -> None:
    for name in SDK_MODULES:
        try:
            importlib.import_module(name)  # Python's per-module import locks make racing threads safe
        except ImportError:  # a module another SDK version does not have; the caller copes
            pass
    # The SDK logs transport hiccups as warnings. With no handler anywhere, Python would print them
    # on stderr, across the TUI; a NullHandler stops that and still lets an app's handlers see them.
    logging.getLogger("mcp").addHandler(logging.NullHandler())


async def import_sdk() -> None:
    """Import the mcp SDK off the event loop, once per process."""
    if not all(name in sys.modules for name in SDK_MODULES):
        await asyncio.to_thread(_import_sdk_modules)


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups from anyio task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def error_code(exc: BaseException) -> int | None:
    error = getattr(exc, "error", None)
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None


def is_connection_error(exc: BaseException) -> bool:
    import anyio

    if error_code(exc) == CONNECTION_CLOSED:
        return True
    if isinstance(exc, TimeoutError):  # an OSError, but a slow server is not a lost one
        return False
    if isinstance(exc, OSError | anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        return True
    # httpx transport errors (connect refused, reset, …) without importing httpx here.
    return any(cls.__name__ == "TransportError" for cls in type(exc).__mro__)


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def notification_method(message: Any) -> str | None:
    method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
    return method if isinstance(method, str) else None


class SessionExpired(CatbuddyError):
    """The streamable HTTP server answered 404 for our session id: it has forgotten us."""


def is_session_expired(exc: BaseException) -> bool:
    if error_code(exc) is None:
        return False
    text = str(getattr(getattr(exc, "error", None), "message", "") or exc).lower()
    return "session" in text and any(word in text for word in ("not found", "terminated", "expired"))


async def open_session(
    stack: AsyncExitStack,
    settings: McpServerSettings,
    work_root: Path,
    stderr: StderrTail | None,
    message_handler: MessageHandler,
) -> Any:
    """Open the transport and an initialised ``ClientSession`` on ``stack`` (left in the same task)."""
    from mcp import ClientSession
    from mcp.types import Implementation

    if stderr is not None:
        read, write = await _open_stdio(stack, settings, work_root, stderr)
    else:
        read, write = await _open_http(stack, settings)
    session = ClientSession(
        read,
        write,
        message_handler=message_handler,  # type: ignore[arg-type]  # the SDK types it as a Protocol
        client_info=Implementation(name=CLIENT_NAME, version=_version()),
    )
    await stack.enter_async_context(session)
    await session.initialize()
    return session


async def _open_stdio(
    stack: AsyncExitStack, settings: McpServerSettings, work_root: Path, stderr: StderrTail
) -> tuple[Any, Any]:
    from mcp import StdioServerParameters, stdio_client

    cwd = Path(os.path.expanduser(settings.cwd)) if settings.cwd else work_root
    params = StdioServerParameters(
        command=os.path.expanduser(settings.command),
        args=list(settings.args),
        env=dict(settings.env) or None,  # added to the SDK's safe defaults (PATH, HOME, …)
        cwd=str(cwd if cwd.is_absolute() else work_root / cwd),
    )
    errlog = await stderr.open()
    try:
        streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    finally:
        stderr.close_writer()  # the child holds its own copy now (or was never born)
    return streams[0], streams[1]


async def _open_http(stack: AsyncExitStack, settings: McpServerSettings) -> tuple[Any, Any]:
    headers = dict(settings.headers) or None
    try:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client
    except ImportError:  # mcp 1.x spells it differently and takes the headers itself
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

        streams = await stack.enter_async_context(streamablehttp_client(settings.url, headers=headers))
        return streams[0], streams[1]
    http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
    streams = await stack.enter_async_context(streamable_http_client(settings.url, http_client=http))
    return streams[0], streams[1]


async def list_tools(session: Any) -> list[dict[str, Any]]:
    """Every page of ``tools/list``, as wire-shape dicts."""
    from mcp.types import PaginatedRequestParams

    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        if cursor is None:
            page = await session.list_tools()
        else:
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        tools.extend(t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools)
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if not cursor:
            break
    return tools


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("catbuddy")
    except Exception:
        return "0"
