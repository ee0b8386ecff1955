from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from catbuddy.tools import web
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.registry import run_tool
from catbuddy.tools.web import FETCH_MAX_BYTES, FETCH_MAX_CHARS, WebFetchTool, WebSearchTool

PAGE = b"""<html><head><title>Fixture</title><script>alert(1)</script></head><body>
<h2>Install</h2><p>Run <code>pip install x</code> then see <a href="/docs">the docs</a>.</p>
<ul><li>fast</li><li>small</li></ul></body></html>"""


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                url = urlparse(self.path)
                server.requests.append(
                    {
                        "method": self.command,
                        "path": url.path,
                        "query": parse_qs(url.query),
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                route = server.routes.get(url.path)
                if route is None:
                    self.send_error(404)
                else:
                    route(self)

            do_GET = _handle
            do_POST = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def reply(
        self,
        path: str,
        body: bytes,
        ctype: str = "text/html; charset=utf-8",
        status: int = 200,
        **headers: str,
    ) -> None:
        def route(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(status)
            handler.send_header("Content-Type", ctype)
            handler.send_header("Content-Length", str(len(body)))
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(body)

        self.routes[path] = route


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    thread = threading.Thread(target=fake.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture
def local_ctx(make_ctx: Callable[..., ToolContext]) -> ToolContext:
    return make_ctx(allow_private_network=True)


# --- web_fetch ---


async def test_fetch_converts_html_to_markdown(local_ctx: ToolContext, server: FakeServer) -> None:
    server.reply("/page", PAGE)
    result = await WebFetchTool().run({"url": server.url + "/page"}, local_ctx)
    assert "## Install" in result.content
    assert "`pip install x`" in result.content
    assert f"[the docs]({server.url}/docs)" in result.content
    assert "- fast\n- small" in result.content
    assert "alert" not in result.content
    assert server.requests[0]["headers"]["Host"] == f"127.0.0.1:{server.port}"


async def test_fetch_passes_json_and_text_through(local_ctx: ToolContext, server: FakeServer) -> None:
    server.reply("/data.json", b'{"a": [1, 2]}', "application/json")
    result = await WebFetchTool().run({"url": server.url + "/data.json"}, local_ctx)
    assert result.content.endswith('{"a": [1, 2]}')


async def test_fetch_caps_download_and_text(local_ctx: ToolContext, server: FakeServer) -> None:
    server.reply("/big.txt", b"a" * (FETCH_MAX_BYTES + 500_000), "text/plain")
    result = await WebFetchTool().run({"url": server.url + "/big.txt"}, local_ctx)
    assert result.meta["bytes"] == FETCH_MAX_BYTES
    assert "download stopped" in result.content
    assert len(result.content) < FETCH_MAX_CHARS + 500 and "more characters not shown" in result.content


async def test_fetch_follows_redirects_and_reports_final_url(
    local_ctx: ToolContext, server: FakeServer
) -> None:
    server.reply("/page", PAGE)
    server.reply("/old", b"", status=301, Location="/page")
    result = await WebFetchTool().run({"url": server.url + "/old"}, local_ctx)
    assert result.meta["url"] == server.url + "/page" and "## Install" in result.content


async def test_fetch_refuses_redirect_to_a_private_address(
    make_ctx: Callable[..., ToolContext], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Let the fixture server count as public, so only the redirect's target is judged private.
    real = web.refused_reason
    monkeypatch.setattr(web, "refused_reason", lambda ip: None if str(ip) == "127.0.0.1" else real(ip))
    server.reply("/hop", b"", status=302, Location="http://10.1.2.3/secret")
    result = await run_tool(WebFetchTool(), {"url": server.url + "/hop"}, make_ctx())
    assert result.is_error and "10.1.2.3" in result.content and "private" in result.content
    assert [r["path"] for r in server.requests] == ["/hop"]


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/", "http://10.0.0.8/", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/",
     "http://localhost:9/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/"],
)  # fmt: skip
async def test_fetch_refuses_private_addresses_before_connecting(ctx: ToolContext, url: str) -> None:
    with pytest.raises(ToolError, match="Refused"):
        await WebFetchTool().run({"url": url}, ctx)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "javascript:alert(1)"])
async def test_fetch_only_allows_http_and_https(ctx: ToolContext, url: str) -> None:
    with pytest.raises(ToolError, match="Only http and https"):
        await WebFetchTool().run({"url": url}, ctx)


async def test_fetch_http_error_is_a_tool_error(local_ctx: ToolContext, server: FakeServer) -> None:
    result = await run_tool(WebFetchTool(), {"url": server.url + "/missing"}, local_ctx)
    assert result.is_error and "HTTP 404" in result.content


async def test_fetch_refuses_binary_content(local_ctx: ToolContext, server: FakeServer) -> None:
    server.reply("/img.png", b"\x89PNG\x00\x00", "image/png")
    with pytest.raises(ToolError, match="image/png"):
        await WebFetchTool().run({"url": server.url + "/img.png"}, local_ctx)


# --- web_search ---


async def test_search_without_backend_explains_the_config(ctx: ToolContext) -> None:
    result = await run_tool(WebSearchTool(), {"query": "python"}, ctx)
    assert result.is_error
    for key in ("web_search_backend", "web_search_api_key_env", "web_search_url", "config.toml"):
        assert key in result.content


async def test_search_with_missing_key_names_the_variable(
    make_ctx: Callable[..., ToolContext], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CB_TEST_BRAVE_KEY", raising=False)
    ctx = make_ctx(web_search_backend="brave", web_search_api_key_env="CB_TEST_BRAVE_KEY")
    with pytest.raises(ToolError, match=r"\$CB_TEST_BRAVE_KEY"):
        await WebSearchTool().run({"query": "x"}, ctx)


async def test_search_searxng_against_a_local_instance(
    make_ctx: Callable[..., ToolContext], server: FakeServer
) -> None:
    results = [{"title": f"T{i}", "url": f"https://e.org/{i}", "content": f"snippet {i}"} for i in range(8)]
    server.reply("/search", json.dumps({"results": results}).encode(), "application/json")
    ctx = make_ctx(web_search_backend="searxng", web_search_url=server.url)
    result = await WebSearchTool().run({"query": "asyncio timeout", "count": 3}, ctx)
    assert server.requests[0]["query"] == {"q": ["asyncio timeout"], "format": ["json"]}
    assert result.content == "\n\n".join(
        f"{i + 1}. T{i}\n   https://e.org/{i}\n   snippet {i}" for i in range(3)
    )


async def test_search_brave_request_shape(
    make_ctx: Callable[..., ToolContext], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CB_TEST_BRAVE_KEY", "secret-key")
    body = {"web": {"results": [{"title": "A", "url": "https://a", "description": "d"}]}}
    server.reply("/brave", json.dumps(body).encode(), "application/json")
    ctx = make_ctx(
        web_search_backend="brave",
        web_search_url=server.url + "/brave",
        web_search_api_key_env="CB_TEST_BRAVE_KEY",
    )
    result = await WebSearchTool().run({"query": "q"}, ctx)
    request = server.requests[0]
    assert request["headers"]["X-Subscription-Token"] == "secret-key"
    assert request["query"] == {"q": ["q"], "count": ["5"]}
    assert result.content == "1. A\n   https://a\n   d"


async def test_search_tavily_request_shape(
    make_ctx: Callable[..., ToolContext], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CB_TEST_TAVILY_KEY", "tvly-1")
    server.reply("/tavily", json.dumps({"results": []}).encode(), "application/json")
    ctx = make_ctx(
        web_search_backend="tavily",
        web_search_url=server.url + "/tavily",
        web_search_api_key_env="CB_TEST_TAVILY_KEY",
    )
    result = await WebSearchTool().run({"query": "nothing", "count": 2}, ctx)
    request = server.requests[0]
    assert request["method"] == "POST" and request["headers"]["Authorization"] == "Bearer tvly-1"
    assert json.loads(request["body"]) == {"query": "nothing", "max_results": 2}
    assert result.content.startswith("No results")
