from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.files import (
    READ_MAX_LINE_CHARS,
    READ_MAX_LINES,
    EditFileTool,
    ReadFileTool,
    WriteFileTool,
)
from catbuddy.tools.list_dir import LIST_MAX_ENTRIES, ListDirTool
from catbuddy.tools.registry import run_tool


async def read(ctx: ToolContext, **args: object) -> str:
    return (await ReadFileTool().run(dict(args), ctx)).content


# --- read_file ---


async def test_read_file_numbers_lines_like_cat_n(ctx: ToolContext, root: Path) -> None:
    (root / "a.txt").write_text("alpha\nbeta\n")
    assert await read(ctx, path="a.txt") == "     1\talpha\n     2\tbeta"


async def test_read_file_offset_and_limit_select_lines(ctx: ToolContext, root: Path) -> None:
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await read(ctx, path="a.txt", offset=4, limit=2)
    assert out.startswith("     4\tline 4\n     5\tline 5")
    assert "Use offset=6 to read on" in out


async def test_read_file_caps_lines_and_says_how_to_continue(ctx: ToolContext, root: Path) -> None:
    (root / "big.txt").write_text("".join(f"{i}\n" for i in range(5000)))
    out = await read(ctx, path="big.txt")
    assert out.count("\n") >= READ_MAX_LINES - 1
    assert f"\t{READ_MAX_LINES - 1}\n" in out and f"\t{READ_MAX_LINES}\n" not in out
    assert "of 5,000" in out and f"offset={READ_MAX_LINES + 1}" in out


async def test_read_file_caps_bytes_at_256_kb(ctx: ToolContext, root: Path) -> None:
    (root / "wide.txt").write_text(("x" * 1000 + "\n") * 1000)  # ~1 MB in 1,000 lines
    out = await read(ctx, path="wide.txt")
    assert len(out.encode()) <= 256 * 1024 + 500
    assert "256 KB" in out and "Use offset=" in out


async def test_read_file_cuts_very_long_lines(ctx: ToolContext, root: Path) -> None:
    (root / "min.js").write_text("y" * (READ_MAX_LINE_CHARS * 3))
    out = await read(ctx, path="min.js")
    assert len(out) < READ_MAX_LINE_CHARS + 200 and "line cut" in out


async def test_read_file_refuses_binary(ctx: ToolContext, root: Path) -> None:
    (root / "img.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    with pytest.raises(ToolError, match="binary"):
        await read(ctx, path="img.bin")


async def test_read_file_reads_a_latin1_file_and_says_it_is_not_utf8(ctx: ToolContext, root: Path) -> None:
    # Issue 31: a latin-1 file showed U+FFFD with no word about its encoding.
    (root / "latin.txt").write_bytes("café naïve\nplain\n".encode("latin-1"))
    out = await read(ctx, path="latin.txt")
    assert out.startswith("     1\tcafé naïve\n     2\tplain")
    assert "latin.txt is not UTF-8: read as Windows-1252" in out and "\ufffd" not in out


async def test_read_file_names_latin1_when_a_byte_is_undefined_in_windows_1252(
    ctx: ToolContext, root: Path
) -> None:
    (root / "odd.txt").write_bytes(b"caf\xe9 \x81\n")
    out = await read(ctx, path="odd.txt")
    assert out.startswith("     1\tcafé \x81")
    assert "read as latin-1 (ISO-8859-1)" in out


async def test_read_file_marks_bytes_that_are_not_utf8_after_a_utf8_head(
    ctx: ToolContext, root: Path
) -> None:
    (root / "mixed.txt").write_bytes(b"plain\n" * 3000 + b"caf\xe9\n")
    out = await read(ctx, path="mixed.txt", offset=3001)
    assert out.startswith("  3001\tcaf\ufffd")
    assert "1 of the lines shown hold bytes that are not UTF-8" in out


async def test_read_file_missing_suggests_similar_names(ctx: ToolContext, root: Path) -> None:
    (root / "config.py").write_text("")
    with pytest.raises(ToolError, match=r"not found.*config\.py"):
        await read(ctx, path="confg.py")


async def test_read_file_on_directory_points_to_list_dir(ctx: ToolContext, root: Path) -> None:
    (root / "src").mkdir()
    with pytest.raises(ToolError, match="list_dir"):
        await read(ctx, path="src")


async def test_read_file_offset_past_end_is_an_error(ctx: ToolContext, root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    with pytest.raises(ToolError, match="past the end"):
        await read(ctx, path="a.txt", offset=5)


# --- write_file ---


async def test_write_file_creates_parents_and_reports(ctx: ToolContext, root: Path) -> None:
    result = await WriteFileTool().run({"path": "a/b/c.txt", "content": "hi\nthere\n"}, ctx)
    assert (root / "a/b/c.txt").read_text() == "hi\nthere\n"
    assert result.content.startswith("Created a/b/c.txt (2 lines, 9 bytes)")


async def test_write_file_overwrite_shows_diff(ctx: ToolContext, root: Path) -> None:
    (root / "f.txt").write_text("old\n")
    result = await WriteFileTool().run({"path": "f.txt", "content": "new\n"}, ctx)
    assert result.content.startswith("Overwrote f.txt")
    assert result.display is not None and "-old" in result.display and "+new" in result.display


async def test_write_file_without_content_writes_nothing(ctx: ToolContext, root: Path) -> None:
    (root / "keep.txt").write_text("precious\n")
    result = await run_tool(WriteFileTool(), {"path": "keep.txt"}, ctx)
    assert result.is_error and "content" in result.content
    assert (root / "keep.txt").read_text() == "precious\n"


async def test_write_file_empty_string_is_written(ctx: ToolContext, root: Path) -> None:
    await WriteFileTool().run({"path": "empty.txt", "content": ""}, ctx)
    assert (root / "empty.txt").read_text() == ""


# --- edit_file ---


async def test_edit_file_replaces_unique_match_and_returns_diff(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    result = await EditFileTool().run({"path": "m.py", "old_string": "b = 2", "new_string": "b = 3"}, ctx)
    assert (root / "m.py").read_text() == "a = 1\nb = 3\n"
    assert "-b = 2" in result.content and "+b = 3" in result.content
    assert result.display == result.content.split("\n\n", 1)[1]


async def test_edit_file_no_match_shows_closest_region(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return compute(1, 2)\n\nx = 3\n")
    with pytest.raises(ToolError) as err:
        await EditFileTool().run(
            {"path": "m.py", "old_string": "return compute(1,2)", "new_string": "pass"}, ctx
        )
    assert "not found" in str(err.value)
    assert "     2\t    return compute(1, 2)" in str(err.value)


async def test_edit_file_applies_a_whitespace_only_difference_in_the_files_indentation(
    ctx: ToolContext, root: Path
) -> None:
    (root / "m.py").write_text("if x:\n\treturn 1\n")
    result = await EditFileTool().run(
        {"path": "m.py", "old_string": "if x:\n    return 1", "new_string": "if x:\n    return 2"}, ctx
    )
    assert result.meta["match"] == "indentation-flexible"
    assert (root / "m.py").read_text() == "if x:\n\treturn 2\n"


async def test_edit_file_several_matches_need_replace_all(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("x = 1\ny = 2\nx = 1\n")
    with pytest.raises(ToolError, match=r"2 times.*lines 1, 3"):
        await EditFileTool().run({"path": "m.py", "old_string": "x = 1", "new_string": "x = 9"}, ctx)
    await EditFileTool().run(
        {"path": "m.py", "old_string": "x = 1", "new_string": "x = 9", "replace_all": True}, ctx
    )
    assert (root / "m.py").read_text() == "x = 9\ny = 2\nx = 9\n"


async def test_edit_file_keeps_crlf_and_bom(ctx: ToolContext, root: Path) -> None:
    (root / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    await EditFileTool().run({"path": "w.txt", "old_string": "one\ntwo", "new_string": "uno\ndos"}, ctx)
    assert (root / "w.txt").read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


async def test_edit_file_rejects_identical_strings(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("x\n")
    with pytest.raises(ToolError, match="same"):
        await EditFileTool().run({"path": "m.py", "old_string": "x", "new_string": "x"}, ctx)


async def test_edit_file_missing_file_is_an_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="not found"):
        await EditFileTool().run({"path": "nope.py", "old_string": "a", "new_string": "b"}, ctx)


# --- list_dir ---


async def test_list_dir_shows_tree_with_dirs_marked_and_ignores_noise(ctx: ToolContext, root: Path) -> None:
    for folder in ("src/pkg", ".git/objects", "node_modules/x", ".venv/lib", "__pycache__", "pkg.egg-info"):
        (root / folder).mkdir(parents=True)
    (root / "src/main.py").write_text("")
    (root / "src/pkg/deep.py").write_text("")
    (root / "README.md").write_text("")
    out = (await ListDirTool().run({}, ctx)).content
    assert out == "./\n  src/\n    pkg/\n    main.py\n  README.md"


async def test_list_dir_depth_goes_deeper(ctx: ToolContext, root: Path) -> None:
    (root / "a/b/c").mkdir(parents=True)
    out = (await ListDirTool().run({"path": "a", "depth": 3}, ctx)).content
    assert out == "a/\n  b/\n    c/"


async def test_list_dir_is_capped_with_count_left_out(ctx: ToolContext, root: Path) -> None:
    for i in range(LIST_MAX_ENTRIES + 25):
        (root / f"f{i:04}").write_text("")
    result = await ListDirTool().run({}, ctx)
    assert result.content.count("\n  f") == LIST_MAX_ENTRIES
    assert "25 more entries not shown" in result.content


async def test_list_dir_on_file_is_an_error(ctx: ToolContext, root: Path) -> None:
    (root / "f.txt").write_text("")
    with pytest.raises(ToolError, match="read_file"):
        await ListDirTool().run({"path": "f.txt"}, ctx)
