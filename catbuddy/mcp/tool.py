"""MCP tools as catbuddy tools: names, schemas, approval and what a call result reads like to the model.

Everything here works on the wire shape of MCP objects (camelCase dicts: ``inputSchema``, ``isError``,
``structuredContent``, ``mimeType``), which is stable across SDK versions; this module never imports mcp.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from catbuddy.images import MAX_IMAGE_BYTES, sniff_mime, store_image
from catbuddy.safety.kinds import ToolKind
from catbuddy.text import valid_text
from catbuddy.tool_meta import FactKind, LedgerFact, ToolMeta
from catbuddy.tools.base import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from catbuddy.config import McpServerSettings

TOOL_PREFIX = "mcp"
MAX_TOOL_NAME = 64  # OpenAI's limit on function names
NAME_HASH_LENGTH = 8  # suffix that keeps a shortened or clashing name unique
APPROVALS = ("ask", "auto", "deny")
DEFAULT_APPROVAL = "ask"
# A tool result is one message to the model; a runaway server must not flood the window.
MAX_RESULT_CHARS = 60_000
RESULT_HEAD_CHARS = 40_000

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class ToolCaller(Protocol):
    """What an MCP tool needs from the manager: a way to call its remote tool."""

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def mcp_tool_name(server: str, tool: str, taken: set[str] | None = None) -> str:
    """``mcp__<server>__<tool>``, limited to ``[A-Za-z0-9_-]`` and 64 characters.

    A name that had to be shortened, or that clashes with one in ``taken``, gets a short hash of the
    original pair so two remote tools never share a name.
    """
    name = f"{TOOL_PREFIX}__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME and (taken is None or name not in taken):
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:NAME_HASH_LENGTH]
    return f"{name[: MAX_TOOL_NAME - NAME_HASH_LENGTH - 1]}_{digest}"


def object_schema(schema: Any) -> dict[str, Any]:
    """The tool's input schema as a JSON-schema object, which function calling requires."""
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        # A non-object schema cannot describe keyword arguments; the server gets none.
        return {"type": "object", "properties": {}}
    out = dict(schema)
    out["type"] = "object"
    if not isinstance(out.get("properties"), Mapping):
        out["properties"] = {}
    return out


def resolve_approval(settings: McpServerSettings, tool: str, full_name: str) -> str:
    """Per-tool setting (by remote or full name), else the server's, else ``ask``.

    An unknown value falls back to ``ask``: asking is the safe reading of a typo.
    """
    for value in (settings.tool_approval.get(tool), settings.tool_approval.get(full_name), settings.approval):
        if value:
            return value if value in APPROVALS else DEFAULT_APPROVAL
    return DEFAULT_APPROVAL


def _decoded_size(data: Any) -> int:
    if not isinstance(data, str):
        return 0
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _resource_text(resource: Mapping[str, Any]) -> str:
    uri = resource.get("uri", "?")
    if isinstance(resource.get("text"), str):
        return f"[resource: {uri}]\n{resource['text']}"
    mime = resource.get("mimeType") or "application/octet-stream"
    return f"[resource: {uri}, {mime}, {_decoded_size(resource.get('blob'))} bytes]"


def content_part_text(part: Mapping[str, Any]) -> str:
    """One content block as text: text as is, binary payloads summarised (the model cannot see them)."""
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind in ("image", "audio"):
        mime = part.get("mimeType") or "unknown"
        return f"[{kind}: {mime}, {_decoded_size(part.get('data'))} bytes]"
    if kind == "resource" and isinstance(part.get("resource"), Mapping):
        return _resource_text(part["resource"])
    if kind == "resource_link":
        label = part.get("name") or part.get("title") or ""
        return f"[resource link: {part.get('uri', '?')}" + (f" ({label})]" if label else "]")
    return f"[{kind or 'unknown'} content]"


def _capped(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    tail = MAX_RESULT_CHARS - RESULT_HEAD_CHARS
    dropped = len(text) - MAX_RESULT_CHARS
    return f"{text[:RESULT_HEAD_CHARS]}\n… [{dropped} characters cut] …\n{text[-tail:]}"


def result_text(result: Mapping[str, Any]) -> str:
    """What the model reads for a ``CallToolResult``.

    Structured content is added only when no text block is there: servers that return both usually
    put the same JSON in the text, and the model need not read it twice.
    """
    parts = [p for p in result.get("content") or [] if isinstance(p, Mapping)]
    texts = [content_part_text(p) for p in parts]
    structured = result.get("structuredContent")
    if structured is not None and not any(p.get("type") == "text" for p in parts):
        texts.append(json.dumps(structured, ensure_ascii=False, indent=2))
    text = "\n".join(t for t in texts if t)
    # JSON from a server may carry lone surrogates (escaped); they become U+FFFD here, at the edge.
    return valid_text(_capped(text)) if text else "(no output)"


class McpTool(Tool):
    """One remote tool. Each gets its own subclass (``make_mcp_tool``) because name, description and
    parameters are class attributes of every catbuddy tool. The rest of the contract keeps its defaults:
    never microcompacted, the files it writes unknown, an empty approval preview (the dialog shows the
    call's key argument)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}}
    kind: ClassVar[ToolKind] = ToolKind.EXTERNAL

    def __init__(self, caller: ToolCaller, server: str, remote_name: str, approval_override: str) -> None:
        self.caller = caller
        self.server = server
        self.remote_name = remote_name
        self.approval_override = approval_override  # "ask", "auto" (never asks) or "deny"

    def ledger_facts(self, args: Mapping[str, Any], meta: ToolMeta) -> list[LedgerFact]:
        return [LedgerFact(FactKind.EXTERNAL, self.name)]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        result = await self.caller.call_tool(self.server, self.remote_name, args)
        workspace = getattr(ctx, "workspace", None)  # callers outside a session pass no context
        images = (
            await asyncio.to_thread(stored_images, result, workspace.home) if workspace is not None else []
        )
        return ToolResult(
            content=result_text(result),
            is_error=bool(result.get("isError")),
            meta={"server": self.server, "tool": self.remote_name},
            images=images,
        )


def stored_images(result: Mapping[str, Any], home: Path) -> list[Path]:
    """The result's image blocks, kept once in the catbuddy home, so a model that sees images gets them
    (agent/tool_calls.py adds them after the call's results); over-size or unknown ones are left as text."""
    paths: list[Path] = []
    for part in result.get("content") or []:
        if (
            not isinstance(part, Mapping)
            or part.get("type") != "image"
            or not isinstance(part.get("data"), str)
        ):
            continue
        try:
            data = base64.b64decode(part["data"], validate=True)
        except (ValueError, binascii.Error):
            continue
        mime = sniff_mime(data)
        if mime is None or len(data) > MAX_IMAGE_BYTES:
            continue
        try:
            paths.append(store_image(home, data, mime).path)
        except OSError:
            continue
    return paths


def make_mcp_tool(
    caller: ToolCaller,
    settings: McpServerSettings,
    remote: Mapping[str, Any],
    taken: set[str] | None = None,
) -> McpTool:
    """Build the catbuddy tool for one entry of a server's ``tools/list``."""
    remote_name = str(remote["name"])
    full_name = mcp_tool_name(settings.name, remote_name, taken)
    description = str(
        remote.get("description") or remote.get("title") or f"{remote_name} (MCP server {settings.name})"
    )
    cls = type(
        f"McpTool_{full_name}",
        (McpTool,),
        {
            "name": full_name,
            "description": description,
            "parameters": object_schema(remote.get("inputSchema")),
        },
    )
    return cls(caller, settings.name, remote_name, resolve_approval(settings, remote_name, full_name))
