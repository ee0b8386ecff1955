"""A small MCP server for the client tests, built with the real `mcp` SDK.

Run as ``python mcp_toy_server.py stdio`` (stdio transport) or ``python mcp_toy_server.py http PORT``
(streamable HTTP on 127.0.0.1). Its tools cover what the client must handle: plain text, a tool
error (isError), a slow call, a crash in the middle of a call, an image, and the server's own pid.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent

# A 1x1 transparent PNG, so the image summary has a real payload to measure.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer(name="toy")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep for the given number of seconds, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    print("toy server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def picture() -> ImageContent:
    """A tiny PNG image."""
    return ImageContent(type="image", data=base64.b64encode(PNG_1X1).decode(), mime_type="image/png")


def main(argv: list[str]) -> None:
    print("toy server: starting", file=sys.stderr, flush=True)
    if argv[:1] == ["http"]:
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
