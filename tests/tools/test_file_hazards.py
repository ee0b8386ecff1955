"""Files that could hang, flood or crash a tool call: FIFOs, devices, sockets, NUL bytes, huge lines.

A special file is refused before it is opened for real (a FIFO with nobody at the other end would
block forever), reads are bounded in bytes, and whatever goes wrong comes back as the call's result.
Every call here runs under a generous ``wait_for``: a regression shows up as a failure, not a hang.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from catbuddy.safety.kinds import ToolKind
from catbuddy.tools import files
from catbuddy.tools.base import Tool, ToolContext, ToolResult
from catbuddy.tools.files import EditFileTool, ReadFileTool, WriteFileTool
from catbuddy.tools.grep import GrepTool, find_rg
from catbuddy.tools.list_dir import ListDirTool
from catbuddy.tools.registry import run_tool

HANG_GUARD = 20.0  # seconds; far beyond what any of these calls needs
needs_rg = pytest.mark.skipif(find_rg() is None, reason="ripgrep not installed")
ENGINES = [pytest.param(True, marks=needs_rg, id="rg"), pytest.param(False, id="python")]


async def call(tool: Tool, ctx: ToolContext, **args: Any) -> ToolResult:
    return await asyncio.wait_for(run_tool(tool, args, ctx), HANG_GUARD)


@pytest.fixture
def fifo(root: Path) -> Path:
    path = root / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def unix_socket(root: Path) -> Any:
    path = root / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    yield path
    server.close()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadFileTool(), {}),
        (WriteFileTool(), {"content": "new"}),
        (EditFileTool(), {"old_string": "a", "new_string": "b"}),
    ],
    ids=["read_file", "write_file", "edit_file"],
)
async def test_a_fifo_is_refused_by_every_file_tool_without_blocking(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, fifo: Path
) -> None:
    result = await call(tool, ctx, path="pipe", **args)
    assert result.is_error
    assert "pipe is a FIFO (named pipe), not a regular file" in result.content
    assert fifo.is_fifo()  # still there, untouched


async def test_a_socket_is_refused(ctx: ToolContext, unix_socket: Path) -> None:
    for tool, extra in ((ReadFileTool(), {}), (WriteFileTool(), {"content": "x"})):
        result = await call(tool, ctx, path="sock", **extra)
        assert result.is_error and "is a socket, not a regular file" in result.content


async def test_a_device_is_refused(make_ctx: Callable[..., ToolContext]) -> None:
    ctx = make_ctx(allow_outside_work_root=True)
    read = await call(ReadFileTool(), ctx, path="/dev/zero")
    assert read.is_error and "/dev/zero is a character device" in read.content
    write = await call(WriteFileTool(), ctx, path="/dev/null", content="x")
    assert write.is_error and "character device" in write.content


async def test_a_symlink_to_a_fifo_is_refused_like_the_fifo(ctx: ToolContext, root: Path, fifo: Path) -> None:
    (root / "link.txt").symlink_to(fifo)
    result = await call(WriteFileTool(), ctx, path="link.txt", content="x")
    assert result.is_error and "FIFO" in result.content


@pytest.mark.parametrize("use_rg", ENGINES)
async def test_grep_refuses_a_fifo_target_and_skips_fifos_in_a_folder(
    use_rg: bool, ctx: ToolContext, root: Path, fifo: Path
) -> None:
    (root / "a.txt").write_text("needle\n")
    direct = await call(GrepTool(use_rg=use_rg), ctx, pattern="needle", path="pipe")
    assert direct.is_error and "FIFO" in direct.content
    walked = await call(GrepTool(use_rg=use_rg), ctx, pattern="needle")
    assert walked.content == "a.txt:1:needle"


async def test_list_dir_shows_a_fifo_without_opening_it(ctx: ToolContext, fifo: Path) -> None:
    result = await call(ListDirTool(), ctx)
    assert "pipe" in result.content and not result.is_error


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadFileTool(), {"path": "a\x00b"}),
        (WriteFileTool(), {"path": "a\x00b", "content": "x"}),
        (EditFileTool(), {"path": "a\x00b", "old_string": "x", "new_string": "y"}),
        (ListDirTool(), {"path": "a\x00b"}),
        (GrepTool(use_rg=False), {"pattern": "x", "path": "a\x00b"}),
    ],
    ids=["read_file", "write_file", "edit_file", "list_dir", "grep"],
)
async def test_a_nul_byte_in_a_path_is_an_error_result(
    tool: Tool, args: dict[str, Any], ctx: ToolContext
) -> None:
    result = await call(tool, ctx, **args)
    assert result.is_error and result.content.startswith("Error:")


async def test_a_huge_file_without_newlines_is_read_in_bounded_memory(ctx: ToolContext, root: Path) -> None:
    size = 32 * 1024 * 1024
    with (root / "one-line.txt").open("wb") as handle:
        block = b"abcdefgh" * (1024 * 128)
        for _ in range(size // len(block)):
            handle.write(block)
    tracemalloc.start()
    try:
        result = await call(ReadFileTool(), ctx, path="one-line.txt")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error
    assert f"[... line cut, {size - files.READ_MAX_LINE_BYTES:,} more bytes]" in result.content
    assert peak < 8 * 1024 * 1024  # a 32 MB line never sits in memory


async def test_line_counts_past_the_read_stay_exact(ctx: ToolContext, root: Path) -> None:
    (root / "many.txt").write_text("x\n" * 10_000 + "last without newline")
    result = await call(ReadFileTool(), ctx, path="many.txt", limit=3)
    assert "of 10,001" in result.content


async def test_a_long_line_cut_inside_a_multibyte_character_shows_no_spurious_mark(
    ctx: ToolContext, root: Path
) -> None:
    (root / "wide.txt").write_text("é" * 10_000)  # 2 bytes each: the cut falls mid-character or not
    result = await call(ReadFileTool(), ctx, path="wide.txt")
    assert "\ufffd" not in result.content and "line cut" in result.content


async def test_edit_file_refuses_a_file_over_its_size_limit(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "EDIT_MAX_BYTES", 100)
    (root / "big.txt").write_text("a" * 200)
    result = await call(EditFileTool(), ctx, path="big.txt", old_string="a", new_string="b", replace_all=True)
    assert result.is_error and "over the 100-byte limit" in result.content
    assert (root / "big.txt").read_text() == "a" * 200


async def test_write_file_over_a_large_file_skips_the_diff_but_writes(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "DIFF_MAX_BYTES", 10)
    (root / "big.txt").write_text("old content that is long")
    result = await call(WriteFileTool(), ctx, path="big.txt", content="new")
    assert not result.is_error and result.display is None
    assert (root / "big.txt").read_text() == "new"


async def test_file_tools_do_their_work_off_the_event_loop(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "a.txt").write_text("alpha\n")
    threads: list[str] = []
    real = files._read_lines

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(files, "_read_lines", spy)
    await call(ReadFileTool(), ctx, path="a.txt")
    assert threads and threads[0] != threading.main_thread().name


async def test_written_text_with_lone_surrogates_is_stored_as_utf8(ctx: ToolContext, root: Path) -> None:
    result = await call(WriteFileTool(), ctx, path="s.txt", content="bad \udcff byte")
    assert not result.is_error
    assert (root / "s.txt").read_bytes() == "bad \ufffd byte".encode()


# --- no exception escapes a call ------------------------------------------------------------------


class _Broken(Tool):
    name = "broken"
    description = "raises"
    parameters = {"type": "object", "properties": {}}
    kind = ToolKind.READ

    def __init__(self, exc: BaseException | None = None, result: Any = None) -> None:
        self.exc, self.result = exc, result

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if self.exc is not None:
            raise self.exc
        return self.result  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "tool",
    [
        _Broken(RecursionError("maximum recursion depth exceeded")),
        _Broken(MemoryError()),
        _Broken(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")),
        _Broken(ValueError("embedded null byte")),
        _Broken(result="a bare string"),
        _Broken(result=ToolResult(content=None)),  # type: ignore[arg-type]
    ],
    ids=["recursion", "memory", "decode", "value", "wrong-type", "no-content"],
)
async def test_any_failure_in_a_tool_becomes_its_error_result(tool: Tool, ctx: ToolContext) -> None:
    result = await call(tool, ctx)
    assert result.is_error and result.content.startswith("Error: broken")


async def test_tool_output_with_lone_surrogates_enters_the_history_as_valid_text(ctx: ToolContext) -> None:
    tool = _Broken(result=ToolResult("out \udcff put", display="shown \udc80"))
    result = await call(tool, ctx)
    assert result.content == "out \ufffd put" and result.display == "shown \ufffd"
