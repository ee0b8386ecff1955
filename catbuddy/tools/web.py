"""web_fetch and web_search.

web_fetch refuses private, loopback, link-local, multicast and reserved addresses (unless
``tools.allow_private_network``) after resolving the host itself, and then connects to the address it
checked (the Host header and TLS name stay the original), so a DNS answer cannot change between the
check and the connection. Redirects are followed by hand, each hop checked the same way.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from catbuddy.safety.kinds import ToolKind
from catbuddy.text import truncate_head
from catbuddy.tool_meta import FactKind, LedgerFact, ToolMeta, ToolStatus
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    import httpx

    from catbuddy.config import ToolSettings

FETCH_MAX_BYTES = 2 * 1024 * 1024
FETCH_MAX_CHARS = 50_000
FETCH_TIMEOUT_SECONDS = 30.0
FETCH_MAX_REDIRECTS = 5
SEARCH_TIMEOUT_SECONDS = 20.0
SEARCH_DEFAULT_RESULTS = 5
SEARCH_MAX_RESULTS = 10
USER_AGENT = "catbuddy/0.1 (+https://github.com/catbuddy; terminal coding assistant)"
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-yaml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
SEARCH_ENDPOINTS = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}


# --- address checks ----------------------------------------------------------------------------------


NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
# RFC 6052: where the IPv4 address sits (byte offsets, skipping the "u" byte 8) for each prefix length.
NAT64_LAYOUTS = ((6, 7, 9, 10), (7, 9, 10, 11), (9, 10, 11, 12), (12, 13, 14, 15))  # /48 /56 /64 /96


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for: IPv4-mapped, 6to4, Teredo (server and client),
    NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48, every RFC 6052 layout), IPv4-compatible."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    packed = ip.packed
    if ip in NAT64_WELL_KNOWN:
        return [ipaddress.IPv4Address(packed[12:])]
    if ip in NAT64_LOCAL:
        return [ipaddress.IPv4Address(bytes(packed[i] for i in layout)) for layout in NAT64_LAYOUTS]
    if int(ip) >> 32 == 0 and int(ip) > 1:  # ::a.b.c.d, IPv4-compatible (not :: or ::1)
        return [ipaddress.IPv4Address(packed[12:])]
    return []


def refused_reason(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address may not be fetched from; an IPv6 form embedding IPv4 is judged by what it embeds."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded:
            for inner in embedded:
                reason = _address_reason(inner)
                if reason:
                    return f"{reason} (IPv4 {inner} inside {ip})"
            return None
    return _address_reason(ip)


def _address_reason(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    for label, flag in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("private", ip.is_private),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("unspecified", ip.is_unspecified),
        ("not globally routable", not ip.is_global),
    ):
        if flag:
            return label
    return None


async def resolve_checked(host: str, port: int, allow_private: bool) -> str:
    """An address for ``host`` that may be contacted, or a ToolError (before any connection is made)."""
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
        addresses = [str(literal)]
    except ValueError:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise ToolError(f"Could not resolve {host}: {exc.strerror or exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not addresses:
        raise ToolError(f"Could not resolve {host}.")
    if not allow_private:
        for address in addresses:
            reason = refused_reason(ipaddress.ip_address(address.split("%")[0]))
            if reason:
                raise ToolError(
                    f"Refused: {host} resolves to {address}, a {reason} address. Fetching from the local "
                    "network is off; set `tools.allow_private_network = true` in config.toml to allow it."
                )
    return addresses[0]


# --- web_fetch -------------------------------------------------------------------------------------


class WebFetchTool(Tool):
    name = "web_fetch"
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http:// or https:// URL."},
            "max_chars": {"type": "integer", "description": "Characters to return (default and cap 50000)."},
        },
        "required": ["url"],
    }
    kind = ToolKind.NETWORK
    microcompactable = True

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        url = args.get("url")  # a failed fetch too: the error says what went wrong with it
        return [LedgerFact(FactKind.URL, url)] if isinstance(url, str) and url.strip() else []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import httpx

        url = args.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ToolError("`url` must be an http:// or https:// URL.")
        max_chars = args.get("max_chars") or FETCH_MAX_CHARS
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ToolError("`max_chars` must be a positive integer.")
        max_chars = min(max_chars, FETCH_MAX_CHARS)
        try:
            async with asyncio.timeout(FETCH_TIMEOUT_SECONDS):
                final, status, ctype, body, cut = await _fetch(url.strip(), ctx.settings.tools)
        except TimeoutError:
            raise ToolError(f"Fetching {url} took longer than {FETCH_TIMEOUT_SECONDS:g} s.") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"Fetching {url} failed: {type(exc).__name__}: {exc}") from None
        text = await asyncio.to_thread(_decode, body, ctype, final)  # HTML conversion: off the loop
        if status >= 400:
            raise ToolError(f"HTTP {status} from {final}.\n{text[:1000]}")
        note = f" (download stopped at {FETCH_MAX_BYTES:,} bytes)" if cut else ""
        header = f"URL: {final}\nContent-Type: {ctype or 'unknown'}{note}\n\n"
        content = header + truncate_head(text, max_chars, "Fetch a more specific page to see other parts.")
        return ToolResult(content, meta={"url": final, "status": status, "bytes": len(body)})


async def _fetch(url: str, settings: ToolSettings) -> tuple[str, int, str, bytes, bool]:
    import httpx

    current = url
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=FETCH_TIMEOUT_SECONDS, trust_env=False
    ) as client:
        for _ in range(FETCH_MAX_REDIRECTS + 1):
            request = await _pinned_request(client, current, settings.allow_private_network)
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect and "location" in response.headers:
                    current = urljoin(current, response.headers["location"])
                    continue
                body, cut = await _read_capped(response)
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                charset = response.charset_encoding or ""
                return current, response.status_code, f"{ctype}{';' + charset if charset else ''}", body, cut
            finally:
                await response.aclose()
    raise ToolError(f"Too many redirects (more than {FETCH_MAX_REDIRECTS}) starting from {url}.")


async def _pinned_request(client: httpx.AsyncClient, url: str, allow_private: bool) -> httpx.Request:
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ToolError(f"Not a valid URL: {url} ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise ToolError(
            f"Only http and https URLs can be fetched, not {parsed.scheme or 'a bare path'}: {url}"
        )
    if not parsed.host:
        raise ToolError(f"The URL has no host: {url}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    address = await resolve_checked(parsed.host, port, allow_private)
    headers = {
        "Host": parsed.netloc.decode("ascii"),
        "User-Agent": USER_AGENT,
        "Accept": "text/html,*/*;q=0.8",
    }
    request = client.build_request("GET", parsed.copy_with(host=address), headers=headers)
    if parsed.scheme == "https":
        request.extensions["sni_hostname"] = parsed.host  # TLS checks the certificate against the name
    return request


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= FETCH_MAX_BYTES:
            return b"".join(chunks)[:FETCH_MAX_BYTES], True
    return b"".join(chunks), False


def _decode(body: bytes, ctype: str, url: str) -> str:
    mime, _, charset = ctype.partition(";")
    is_text = not mime or mime.startswith(TEXT_TYPES) or mime.endswith(("+json", "+xml"))
    if not is_text:
        raise ToolError(f"{url} is {mime}, not a text or HTML page; web_fetch only returns text.")
    if b"\x00" in body[:8192]:
        raise ToolError(f"{url} looks binary; web_fetch only returns text.")
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        text = body.decode("utf-8", errors="replace")
    if mime in HTML_TYPES or (not mime and text.lstrip()[:15].lower().startswith(("<!doctype", "<html"))):
        # Imported at the first HTML page: html.parser and the converter cost ~8 ms at start-up.
        from catbuddy.tools.html_to_markdown import html_to_markdown

        return html_to_markdown(text, url)
    return text


# --- web_search ------------------------------------------------------------------------------------


class WebSearchTool(Tool):
    name = "web_search"
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "count": {"type": "integer", "description": "Number of results (1-10). Default 5."},
        },
        "required": ["query"],
    }
    kind = ToolKind.NETWORK
    microcompactable = True

    def result_summary(self, args: Mapping[str, Any], meta: ToolMeta) -> str:
        found = meta.extra.get("results")
        if meta.status is ToolStatus.OK and isinstance(found, int):
            return f"{found} result{'' if found == 1 else 's'}"
        return super().result_summary(args, meta)

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        query = args.get("query")
        return [LedgerFact(FactKind.SEARCH, query)] if isinstance(query, str) and query.strip() else []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import httpx

        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("`query` must be a non-empty string.")
        count = args.get("count") or SEARCH_DEFAULT_RESULTS
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ToolError(f"`count` must be an integer from 1 to {SEARCH_MAX_RESULTS}.")
        count = min(count, SEARCH_MAX_RESULTS)
        settings = ctx.settings.tools
        backend, url, key = _search_config(settings)
        try:
            async with httpx.AsyncClient(timeout=SEARCH_TIMEOUT_SECONDS) as client:
                results = await _search(client, backend, url, key, query.strip(), count)
        except httpx.HTTPStatusError as exc:
            raise ToolError(
                f"The {backend} search backend answered HTTP {exc.response.status_code}: {exc.response.text[:300]}"
            ) from None
        except httpx.HTTPError as exc:
            raise ToolError(
                f"The {backend} search backend at {url} failed: {type(exc).__name__}: {exc}"
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise ToolError(
                f"The {backend} search backend sent a response catbuddy could not read: {exc}"
            ) from None
        if not results:
            return ToolResult(f"No results for {query!r}.", meta={"backend": backend, "results": 0})
        lines = [
            f"{i}. {title}\n   {link}\n   {snippet}".rstrip()
            for i, (title, link, snippet) in enumerate(results, 1)
        ]
        return ToolResult("\n\n".join(lines), meta={"backend": backend, "results": len(results)})


def _search_config(settings: ToolSettings) -> tuple[str, str, str]:
    backend = settings.web_search_backend
    if not backend:
        raise ToolError(
            "web_search is not configured. In ~/.catbuddy/config.toml (or .catbuddy/config.toml) under "
            '[tools] set `web_search_backend` to "brave", "tavily" or "searxng"; for brave and tavily also set '
            "`web_search_api_key_env` to the name of the environment variable holding the API key; for searxng "
            'set `web_search_url` to your instance, e.g. "http://localhost:8888". Until then, use web_fetch '
            "on a URL you know."
        )
    url = settings.web_search_url or SEARCH_ENDPOINTS.get(backend, "")
    if not url:
        raise ToolError(
            f"web_search backend {backend!r} needs `tools.web_search_url` (your instance's address)."
        )
    key = ""
    if settings.web_search_api_key_env:
        key = os.environ.get(settings.web_search_api_key_env, "")
        if not key:
            raise ToolError(
                f"web_search ({backend}) reads its API key from ${settings.web_search_api_key_env}, which is "
                "not set. Export it, or change `tools.web_search_api_key_env`."
            )
    elif backend in SEARCH_ENDPOINTS:
        raise ToolError(
            f"web_search backend {backend!r} needs an API key: set `tools.web_search_api_key_env` to the "
            "name of the environment variable that holds it."
        )
    return backend, url, key


async def _search(
    client: httpx.AsyncClient, backend: str, url: str, key: str, query: str, count: int
) -> list[tuple[str, str, str]]:
    if backend == "brave":
        response = await client.get(
            url,
            params={"q": query, "count": count},
            headers={"Accept": "application/json", "X-Subscription-Token": key},
        )
        response.raise_for_status()
        items = response.json().get("web", {}).get("results", [])
        return [(i.get("title", ""), i.get("url", ""), i.get("description", "")) for i in items[:count]]
    if backend == "tavily":
        response = await client.post(
            url,
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {key}"},
        )
        response.raise_for_status()
        items = response.json().get("results", [])
        return [(i.get("title", ""), i.get("url", ""), i.get("content", "")) for i in items[:count]]
    if backend == "searxng":
        endpoint = url.rstrip("/") + ("" if url.rstrip("/").endswith("/search") else "/search")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        response = await client.get(endpoint, params={"q": query, "format": "json"}, headers=headers)
        response.raise_for_status()
        items = response.json().get("results", [])
        return [(i.get("title", ""), i.get("url", ""), i.get("content", "")) for i in items[:count]]
    raise ToolError(f"Unknown web_search backend {backend!r}; use brave, tavily or searxng.")
