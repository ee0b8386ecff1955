"""The `@` picker: typing `@` lists the work root's files (git's list in a repository, a walk honouring
.gitignore otherwise), narrows fuzzily, and Tab/Enter puts `@path ` in the input."""

from __future__ import annotations

import subprocess

from helpers import wait_for

from catbuddy.mentions.files import list_files
from catbuddy.mentions.fuzzy import FuzzyIndex
from catbuddy.tui.widgets.file_picker import FilePicker, mention_being_typed

SIZE = (100, 32)


def make_tree(root) -> None:
    (root / "src").mkdir()
    (root / "src" / "calc.py").write_text("x = 1\n")
    (root / "src" / "cache.py").write_text("y = 2\n")
    (root / "README.md").write_text("# hi\n")
    (root / "build").mkdir()
    (root / "build" / "calc_generated.py").write_text("")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "debug.log").write_text("")


async def test_at_opens_the_picker_and_tab_inserts_the_chosen_path(fake_app, workspace) -> None:
    make_tree(workspace.work_root)
    app, _ = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        app.prompt.focus()
        await pilot.press("e", "x", "p", "l", "a", "i", "n", "space", "@", "c", "l", "c")
        picker = app.query_one(FilePicker)
        await wait_for(
            pilot, lambda: picker.display and picker.selected_path() == "src/calc.py", what="picker"
        )
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.prompt.text == "explain @src/calc.py ", what="inserted path")
        assert not picker.display


async def test_enter_in_the_picker_picks_rather_than_sends(fake_app, workspace) -> None:
    make_tree(workspace.work_root)
    app, holder = fake_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        app.prompt.focus()
        await pilot.press("@", "r", "e", "a", "d")
        picker = app.query_one(FilePicker)
        await wait_for(pilot, lambda: picker.display, what="picker")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.prompt.text == "@README.md ", what="inserted path")
        assert holder["loop"].submitted == []


def test_the_walk_honours_gitignore_when_there_is_no_repository(tmp_path) -> None:
    make_tree(tmp_path)
    index = list_files(tmp_path)
    assert index.source == "walk"
    assert "src/calc.py" in index.paths and "src/" in index.paths
    assert not any(p.startswith("build") or p.endswith(".log") for p in index.paths)


def test_a_repository_lists_what_git_lists(tmp_path) -> None:
    make_tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    index = list_files(tmp_path)
    assert index.source == "git"
    assert set(index.paths) == {".gitignore", "README.md", "src/cache.py", "src/calc.py", "src/"}


def test_ranking_prefers_the_query_in_the_file_name() -> None:
    index = FuzzyIndex(["docs/calculus/notes.md", "src/calc.py", "tests/test_calc.py", "calc/"])
    assert index.search("calc")[:2] == ["calc/", "src/calc.py"]
    assert index.search("tcalc") == ["tests/test_calc.py"]
    assert index.search("zzz") == []


def test_a_mention_is_typed_only_after_a_space_or_at_the_start() -> None:
    assert mention_being_typed("see @sr") == "sr"
    assert mention_being_typed("@") == ""
    assert mention_being_typed("mail me@host") is None
    assert mention_being_typed("see @src/a.py and") is None
