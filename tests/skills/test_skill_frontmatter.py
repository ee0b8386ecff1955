"""Every kind of broken SKILL.md is skipped with a warning naming the file, never a crash."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from skill_helpers import make_workspace, write_skill

from catbuddy.skills.frontmatter import parse_skill_text, split_frontmatter
from catbuddy.skills.loader import discover_skills

BROKEN = {
    "no-frontmatter": ("# Just markdown\n", "no YAML frontmatter"),
    "unclosed": ("---\nname: unclosed\ndescription: x\n", "not closed"),
    "bad-yaml": ("---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n", "invalid YAML"),
    "not-a-mapping": ("---\n- a\n- b\n---\nbody\n", "must be a YAML mapping"),
    "no-name": ("---\ndescription: x\n---\nbody\n", "missing 'name'"),
    "no-description": ("---\nname: no-description\n---\nbody\n", "missing 'description'"),
    "empty-description": ("---\nname: empty-description\ndescription: '  '\n---\n", "non-empty string"),
    "mismatch": ("---\nname: other\ndescription: x\n---\n", "does not match its folder 'mismatch'"),
    "Upper": ("---\nname: Upper\ndescription: x\n---\n", "lowercase letters"),
    "-dash": ("---\nname: -dash\ndescription: x\n---\n", "lowercase letters"),
    "a" * 65: ("---\nname: " + "a" * 65 + "\ndescription: x\n---\n", "limit is 64"),
    "long-description": (
        "---\nname: long-description\ndescription: " + "d" * 1025 + "\n---\n",
        "limit is 1024",
    ),
    "always-string": ("---\nname: always-string\ndescription: x\nalways: 'yes'\n---\n", "'always' must be"),
    "always-int": ("---\nname: always-int\ndescription: x\nalways: 1\n---\n", "'always' must be"),
    "name-number": ("---\nname: 12\ndescription: x\n---\n", "non-empty string"),
    "bad-metadata": ("---\nname: bad-metadata\ndescription: x\nmetadata: [1]\n---\n", "'metadata' must be"),
}


@pytest.mark.parametrize("folder", list(BROKEN))
def test_a_broken_skill_is_skipped_with_a_warning_naming_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, folder: str
) -> None:
    text, expected = BROKEN[folder]
    ws = make_workspace(tmp_path)
    skill_dir = ws.project_skills_dir / folder
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
    write_skill(ws.project_skills_dir, "fine")

    with caplog.at_level(logging.WARNING, logger="catbuddy.skills.loader"):
        catalog = discover_skills(ws)

    assert folder not in catalog and "fine" in catalog
    [problem] = catalog.problems
    assert problem.path == skill_dir / "SKILL.md"
    assert expected in problem.message
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(skill_dir / "SKILL.md") in warnings[0] and expected in warnings[0]


def test_a_skill_md_that_is_not_utf8_is_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = make_workspace(tmp_path)
    folder = ws.project_skills_dir / "binary"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_bytes(b"---\nname: binary\ndescription: \xff\xfe\n---\n")
    with caplog.at_level(logging.WARNING):
        catalog = discover_skills(ws)
    assert "binary" not in catalog
    assert "not valid UTF-8" in catalog.problems[0].message
    assert str(folder / "SKILL.md") in caplog.text


def test_body_is_the_markdown_after_the_closing_fence() -> None:
    header = parse_skill_text("---\nname: x\ndescription: Does x.\n---\n\n# Title\n\nStep one.\n", "x")
    assert header.body == "# Title\n\nStep one."


def test_crlf_line_endings_and_a_bom_are_accepted() -> None:
    header = parse_skill_text("\ufeff---\r\nname: x\r\ndescription: Does x.\r\n---\r\nBody\r\n", "x")
    assert (header.name, header.description, header.body.strip()) == ("x", "Does x.", "Body")


def test_a_folded_multiline_description_becomes_one_line() -> None:
    header = parse_skill_text("---\nname: x\ndescription: >\n  Does x\n  and y.\n---\n", "x")
    assert header.description == "Does x and y."


def test_allowed_tools_may_be_a_yaml_list() -> None:
    header = parse_skill_text("---\nname: x\ndescription: d\nallowed-tools: [exec, grep]\n---\n", "x")
    assert header.allowed_tools == ["exec", "grep"]


def test_split_frontmatter_needs_the_fence_on_the_first_line() -> None:
    with pytest.raises(ValueError, match="must start with a '---' line"):
        split_frontmatter("\n---\nname: x\n---\n")
