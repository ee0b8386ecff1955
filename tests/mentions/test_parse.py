"""Which files a message names: @-mentions (quoted, folders, trailing punctuation) and image paths pasted
or dropped into the terminal; anything that names no file stays plain text."""

from __future__ import annotations

from pathlib import Path

import pytest

from catbuddy.mentions.parse import find_mentions


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text("x")
    (tmp_path / "src").mkdir()
    (tmp_path / "notes on it.md").write_text("y")
    (tmp_path / "Screen Shot.png").write_bytes(b"png")
    return tmp_path.resolve()


def names(text: str, root: Path) -> list[str]:
    return [m.name for m in find_mentions(text, root)]


def test_a_mention_keeps_off_trailing_punctuation(root: Path) -> None:
    assert names("explain @calc.py.", root) == ["calc.py"]
    assert names("(see @calc.py)", root) == ["calc.py"]


def test_quoted_mentions_may_hold_spaces_and_folders_are_mentions(root: Path) -> None:
    found = find_mentions('@"notes on it.md" and @src/', root)
    assert [(m.name, m.is_dir) for m in found] == [("notes on it.md", False), ("src", True)]


def test_words_that_name_no_file_stay_text(root: Path) -> None:
    assert names("ping @alice about @decorators, mail bob@calc.py", root) == []


def test_each_file_is_attached_once(root: Path) -> None:
    assert names("@calc.py and again @calc.py", root) == ["calc.py"]


def test_pasted_image_paths_are_images_bare_quoted_or_escaped(root: Path) -> None:
    shot = root / "Screen Shot.png"
    for pasted in (f"'{shot}'", str(shot).replace(" ", "\\ ")):
        (found,) = find_mentions(f"what is wrong here? {pasted}", root)
        assert found.path == shot and found.is_image


def test_a_mention_outside_the_work_root_is_marked(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other = tmp_path_factory.mktemp("elsewhere") / "secret.txt"
    other.write_text("s")
    (found,) = find_mentions(f"read @{other}", root)
    assert not found.inside
