"""HTML comments in instruction files are notes for the editor: they never reach the model."""

from __future__ import annotations

from catbuddy.config import Settings
from catbuddy.context.assembly.builder import ContextBuilder
from catbuddy.markdown_comments import strip_html_comments
from catbuddy.workspace import Workspace


def test_a_comment_on_its_own_lines_is_removed_with_its_lines() -> None:
    text = "<!--\n  how to edit this file\n-->\n# Title\n\nBody.\n"
    assert strip_html_comments(text) == "# Title\n\nBody.\n"


def test_an_inline_comment_is_removed_and_the_rest_of_the_line_kept() -> None:
    assert strip_html_comments("Run tests <!-- e.g. pytest --> before finishing.\n") == "Run tests  before finishing.\n"


def test_an_indented_comment_line_leaves_no_blank_line_behind() -> None:
    text = "- one\n  <!-- e.g. Tests: `pytest -q` -->\n- two\n"
    assert strip_html_comments(text) == "- one\n- two\n"


def test_a_comment_inside_a_fenced_code_block_is_code_and_stays() -> None:
    text = "Example:\n\n```html\n<!-- keep me -->\n<p>hi</p>\n```\n<!-- drop me -->\nDone.\n"
    assert strip_html_comments(text) == "Example:\n\n```html\n<!-- keep me -->\n<p>hi</p>\n```\nDone.\n"


def test_an_unterminated_comment_is_left_alone() -> None:
    assert strip_html_comments("a <!-- never closed\nb\n") == "a <!-- never closed\nb\n"


def test_text_without_comments_is_returned_unchanged() -> None:
    text = "# A\n\n\n\nB -> C\n"
    assert strip_html_comments(text) is text


def test_blank_lines_left_by_removed_comments_collapse_to_one() -> None:
    assert strip_html_comments("A\n\n<!-- x -->\n\nB\n") == "A\n\nB\n"


def test_the_shipped_defaults_carry_no_comment_into_the_system_prompt(tmp_path) -> None:
    workspace = Workspace.at(tmp_path / "project", tmp_path / "home")
    workspace.work_root.mkdir()
    workspace.init_project()
    prompt = ContextBuilder(workspace, Settings()).build().text
    assert "<!--" not in prompt and "-->" not in prompt
    assert "## AGENTS.md" in prompt and "# Working in this project" in prompt


def test_a_default_memory_file_with_only_its_comment_adds_no_memory_layer(tmp_path) -> None:
    workspace = Workspace.at(tmp_path / "project", tmp_path / "home")
    workspace.work_root.mkdir()
    workspace.init_project()
    built = ContextBuilder(workspace, Settings()).build()
    assert not built.layer("memory") or not built.layer("memory").text
