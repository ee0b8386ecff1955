"""edit_file's matching ladder: which stage finds old_string, and what stays as the file had it."""

from __future__ import annotations

from pathlib import Path

from catbuddy.tools.base import ToolContext
from catbuddy.tools.edit_ladder import Stage, find_edit
from catbuddy.tools.files import EditFileTool
from catbuddy.tools.registry import run_tool


async def edit(ctx: ToolContext, **args: object):
    return await run_tool(EditFileTool(), dict(args), ctx)


def test_exact_match_comes_first() -> None:
    found = find_edit("a = 1\nb = 2\n", "b = 2", "b = 3", replace_all=False)
    assert found is not None and found.stage is Stage.EXACT


def test_trailing_whitespace_is_line_trimmed() -> None:
    found = find_edit("x = 1   \ny = 2\n", "x = 1\ny = 2\n", "x = 5\ny = 2\n", replace_all=False)
    assert found is not None and found.stage is Stage.LINE_TRIMMED
    assert found.apply("x = 1   \ny = 2\n") == "x = 5\ny = 2\n"


def test_spacing_inside_lines_is_whitespace_normalised() -> None:
    found = find_edit("def f(a,  b):\n    pass\n", "def f(a, b):\n", "def f(a, b, c):\n", replace_all=False)
    assert found is not None and found.stage is Stage.WHITESPACE


def test_indentation_is_flexible_and_the_replacement_follows_the_file() -> None:
    text = "class A:\n    def f(self):\n        return 1\n"
    found = find_edit(text, "def f(self):\n    return 1\n", "def f(self):\n    return 2\n", replace_all=False)
    assert found is not None and found.stage is Stage.INDENTATION
    assert found.apply(text) == "class A:\n    def f(self):\n        return 2\n"


def test_over_escaped_quotes_are_undone_in_old_and_new_alike() -> None:
    text = 'print("hi")\n'
    found = find_edit(text, 'print(\\"hi\\")', 'print(\\"bye\\")', replace_all=False)
    assert found is not None and found.stage is Stage.ESCAPES
    assert found.apply(text) == 'print("bye")\n'


def test_blank_lines_around_old_string_are_trimmed_to_whole_lines_only() -> None:
    text = "a\nb\nc\n"
    found = find_edit(text, "\n\nb\n\n", "B\n", replace_all=False)
    assert found is not None and found.stage is Stage.BLANK_LINES and found.apply(text) == "a\nB\nc\n"
    # "text" inside "text." is not a whole line: no stage guesses
    assert find_edit("This is text.\n", "\nThis is text\n", "X\n", replace_all=False) is None


def test_a_fuzzy_stage_with_two_places_does_not_apply() -> None:
    text = "if x:\n    go()\nif y:\n    go()\n"
    assert find_edit(text, "  go()  \n", "stop()\n", replace_all=False) is None


def test_lines_whose_content_differs_are_never_matched() -> None:
    text = "def f():\n    a = 1\n    return a\n"
    assert find_edit(text, "def f():\n    b = 2\n    return a\n", "pass\n", replace_all=False) is None


async def test_the_result_and_meta_say_which_stage_matched(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n")
    result = await edit(ctx, path="m.py", old_string="def f():\nreturn 1", new_string="def f():\nreturn 2")
    assert not result.is_error, result.content
    assert result.meta == {"replacements": 1, "match": "indentation-flexible"}
    assert "Matched indentation-flexible" in result.content
    assert (root / "m.py").read_text() == "def f():\n    return 2\n"


async def test_file_path_is_accepted_for_path(ctx: ToolContext, root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    tool = EditFileTool()
    args = tool.normalize_args({"file_path": "a.txt", "old_string": "one", "new_string": "two"})
    assert args["path"] == "a.txt"  # the approval policy reads `path`
    result = await run_tool(tool, args, ctx)
    assert not result.is_error and (root / "a.txt").read_text() == "two\n"


async def test_crlf_new_string_into_an_lf_file_keeps_lf(ctx: ToolContext, root: Path) -> None:
    (root / "a.txt").write_bytes(b"alpha\nbeta\ngamma\n")
    await edit(ctx, path="a.txt", old_string="beta", new_string="b1\r\nb2")
    assert (root / "a.txt").read_bytes() == b"alpha\nb1\nb2\ngamma\n"


async def test_final_newline_bom_and_crlf_are_kept(ctx: ToolContext, root: Path) -> None:
    (root / "w.cs").write_bytes(b"\xef\xbb\xbfusing A;\r\nclass B {}\r\n")
    await edit(ctx, path="w.cs", old_string="class B {}\n", new_string="class C {}")
    assert (root / "w.cs").read_bytes() == b"\xef\xbb\xbfusing A;\r\nclass C {}\r\n"


async def test_non_utf8_files_get_exact_edits_only(ctx: ToolContext, root: Path) -> None:
    (root / "latin.txt").write_bytes(b"caf\xe9 = 1\n    total = 2\n")
    ok = await edit(ctx, path="latin.txt", old_string="total = 2", new_string="total = 3")
    assert not ok.is_error and (root / "latin.txt").read_bytes() == b"caf\xe9 = 1\n    total = 3\n"
    fuzzy = await edit(ctx, path="latin.txt", old_string="total = 3  \n", new_string="x\n")
    assert fuzzy.is_error and "only an exact match" in fuzzy.content
    assert (root / "latin.txt").read_bytes() == b"caf\xe9 = 1\n    total = 3\n"


async def test_the_approval_preview_shows_the_fuzzy_edit(ctx: ToolContext, root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n")
    preview = EditFileTool().preview(
        {"path": "m.py", "old_string": "return 1", "new_string": "return 2"}, ctx
    )
    assert "+    return 2" in preview.text
