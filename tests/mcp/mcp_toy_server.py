"""A small MCP server for the client tests, built with the real `mcp` SDK.

Run as ``python mcp_toy_server.py stdio`` (stdio transport) or ``python mcp_toy_server.py http PORT``
(streamable HTTP on 127.0.0.1); the tests serve it over HTTP from a thread (``ThreadedHttpServer``)
so the SDK is imported once, in the test process. Its tools cover what the client must handle: plain
text, a tool error (isError), a slow call and an image. Dying servers are the tiny stdio server's job.
"""

from __future__ import annotations

import asyncio
import base64
import sys
import threading
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent

# A 1x1 transparent PNG, so the image summary has a real payload to measure.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def build_server() -> MCPServer:
    """A fresh server (and so a fresh HTTP session manager) each time: a restart forgets sessions."""
    server = MCPServer(name="toy", log_level="WARNING")

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
    def picture() -> ImageContent:
        """A tiny PNG image."""
        return ImageContent(type="image", data=base64.b64encode(PNG_1X1).decode(), mime_type="image/png")

    return server


HTTP_START_TIMEOUT = 15.0
HTTP_STOP_TIMEOUT = 0.1  # seconds; open SSE streams would otherwise hold a graceful shutdown


class ThreadedHttpServer:
    """The toy server over streamable HTTP on 127.0.0.1, run by uvicorn in a thread; stop/start restarts it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: object | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        import uvicorn

        config = uvicorn.Config(
            build_server().streamable_http_app(),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=HTTP_STOP_TIMEOUT,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(target=server.run, name="toy-mcp-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + HTTP_START_TIMEOUT
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("toy HTTP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is not None and thread is not None:
            server.should_exit = True  # type: ignore[attr-defined]
            thread.join(timeout=10)
        self._server = self._thread = None


def main(argv: list[str]) -> None:
    print("toy server: starting", file=sys.stderr, flush=True)
    if argv[:1] == ["http"]:
        import uvicorn

        app = build_server().streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
    else:
        build_server().run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
