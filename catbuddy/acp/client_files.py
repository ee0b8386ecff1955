"""Reads and writes through the editor when it offers `fs/read_text_file` and `fs/write_text_file`: the
model then sees unsaved buffers, and the editor's buffers follow what catbuddy writes. Paths are checked by
the same rules as the built-in tools first (work root, protected files); anything the editor cannot answer
falls back to the disk, as the built-in tool would do it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from catbuddy.tools.base import ToolContext, ToolError, ToolResult
from catbuddy.tools.files import (
    READ_MAX_LINES,
    EditFileTool,
    ReadFileTool,
    WriteFileTool,
    int_arg,
    number_lines,
)
from catbuddy.tools.paths import resolve_path

log = logging.getLogger(__name__)
UTF8_BOM = b"\xef\xbb\xbf"


class ClientReadFile(ReadFileTool):
    def __init__(self, client: Any, session_id: Callable[[], str]) -> None:
        self._client = client
        self._session_id = session_id

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = resolve_path(ctx, args.get("path"), for_write=False)  # the same refusals as read_file
        if not path.is_file():
            return await super().run(args, ctx)  # folders, missing files, shipped defaults: as read_file says
        offset = int_arg(args, "offset", 1, 1)
        limit = min(int_arg(args, "limit", READ_MAX_LINES, 1), READ_MAX_LINES)
        try:
            response = await self._client.read_text_file(
                session_id=self._session_id(), path=str(path), line=offset, limit=limit
            )
        except Exception as exc:  # the editor could not: read the disk as usual
            log.info("fs/read_text_file failed for %s: %s; reading the disk", path, exc)
            return await super().run(args, ctx)
        lines = response.content.splitlines()[:limit]
        if not lines:
            return ToolResult(f"{args.get('path')} is empty (as open in the editor).", meta={"lines": 0})
        return ToolResult(number_lines(lines, offset), meta={"lines": len(lines), "source": "editor"})


class _SendsWrites:
    """After the built-in tool wrote the file (diff, checkpoint, protections), the editor gets the text."""

    _client: Any
    _session_id: Callable[[], str]

    async def _send(self, result: ToolResult, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if result.is_error:
            return result
        try:
            path = resolve_path(ctx, args.get("path"), for_write=False)
            text = path.read_text(encoding="utf-8")
            await self._client.write_text_file(session_id=self._session_id(), path=str(path), content=text)
        except Exception as exc:  # the file is written on disk either way
            log.info("fs/write_text_file failed: %s", exc)
        return result


class ClientWriteFile(_SendsWrites, WriteFileTool):
    def __init__(self, client: Any, session_id: Callable[[], str]) -> None:
        self._client = client
        self._session_id = session_id

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self._send(await super().run(args, ctx), args, ctx)


class ClientEditFile(_SendsWrites, EditFileTool):
    """An edit of the text the editor has open: its unsaved buffer is written to the file first, so the
    edit applies to what the user sees and the buffer the editor gets back keeps their unsaved changes."""

    def __init__(self, client: Any, session_id: Callable[[], str]) -> None:
        self._client = client
        self._session_id = session_id

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await self._take_the_buffer(args, ctx)
        return await self._send(await super().run(args, ctx), args, ctx)

    async def _take_the_buffer(self, args: dict[str, Any], ctx: ToolContext) -> None:
        try:
            path = resolve_path(ctx, args.get("path") or args.get("file_path"), for_write=True)
        except ToolError:
            return  # the edit itself gives the refusal
        if not path.is_file():
            return
        try:
            response = await self._client.read_text_file(session_id=self._session_id(), path=str(path))
        except Exception as exc:  # the editor could not: edit the disk as usual
            log.info("fs/read_text_file failed for %s: %s; editing the disk", path, exc)
            return
        synced = await asyncio.to_thread(_disk_with_buffer, path.read_bytes(), str(response.content))
        if synced is not None:
            await asyncio.to_thread(path.write_bytes, synced)


def _disk_with_buffer(disk: bytes, buffer: str) -> bytes | None:
    """The file's bytes with the buffer's text in the file's own line endings and BOM; None when the two
    hold the same text (or the file is not UTF-8 text, which the editor's buffer cannot stand for)."""
    bom = disk.startswith(UTF8_BOM)
    try:
        text = disk[len(UTF8_BOM) if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError:
        return None
    wanted = buffer.removeprefix("\ufeff").replace("\r\n", "\n")
    if wanted == text.replace("\r\n", "\n"):
        return None
    if "\r\n" in text:
        wanted = wanted.replace("\n", "\r\n")
    return (UTF8_BOM if bom else b"") + wanted.encode("utf-8")


def client_tools(client: Any, session_id: Callable[[], str], *, read: bool, write: bool) -> list[Any]:
    tools: list[Any] = []
    if read:
        tools.append(ClientReadFile(client, session_id))
    if write:
        tools += [ClientWriteFile(client, session_id), ClientEditFile(client, session_id)]
    return tools
