"""The files catbuddy ships in workspace_defaults/ are present, valid and fit their role."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from skill_helpers import make_workspace

from catbuddy.resources import workspace_defaults_dir
from catbuddy.skills.loader import discover_skills, load_skill
from catbuddy.workspace import WORKSPACE_FILES, Workspace, is_default_memory

ALWAYS_ON_WORD_BUDGET = 350  # always-on bodies are in every prompt
SHIPPED_SKILLS = {"memory": True, "my": True, "drawio": False, "github": False}
DEFAULTS = workspace_defaults_dir()
EXAMPLE = DEFAULTS / "skills" / "drawio" / "references" / "example.drawio"
CHECKER = DEFAULTS / "skills" / "drawio" / "scripts" / "check_drawio.py"


@pytest.mark.parametrize(
    "relative", [*WORKSPACE_FILES, *(f"skills/{name}/SKILL.md" for name in SHIPPED_SKILLS)]
)
def test_every_shipped_default_file_exists_and_is_not_empty(relative: str) -> None:
    path = DEFAULTS / relative
    assert path.is_file(), f"{path} is missing"
    assert path.read_text(encoding="utf-8").strip()


@pytest.mark.parametrize(("name", "always"), SHIPPED_SKILLS.items())
def test_shipped_skills_are_valid_with_the_right_mode(name: str, always: bool) -> None:
    skill = load_skill(DEFAULTS / "skills" / name, "shipped")
    assert skill.name == name and skill.always is always
    assert skill.description and "\n" not in skill.description
    assert len(skill.body.split()) > 100  # real instructions, not a stub


def test_no_shipped_skill_is_reported_as_a_problem(tmp_path: Path) -> None:
    catalog = discover_skills(make_workspace(tmp_path))
    assert not catalog.problems
    assert {s.name: s.always for s in catalog.all()} == SHIPPED_SKILLS


@pytest.mark.parametrize("name", [n for n, always in SHIPPED_SKILLS.items() if always])
def test_always_on_skill_bodies_stay_compact(name: str) -> None:
    body = load_skill(DEFAULTS / "skills" / name, "shipped").body
    assert len(body.split()) <= ALWAYS_ON_WORD_BUDGET


def test_the_shipped_memory_is_a_pure_template() -> None:
    text = (DEFAULTS / "MEMORY.md").read_text(encoding="utf-8")
    assert is_default_memory(text)
    assert not re.search(r"^\s*- ", text, re.M), "the template must hold no facts"
    assert not is_default_memory(text + "\n- 2025-01-01: uses pnpm\n")


def test_init_copies_the_shipped_files_into_the_project(tmp_path: Path) -> None:
    ws = Workspace(work_root=tmp_path / "proj", home=tmp_path / "home")
    ws.work_root.mkdir()
    ws.init_project()
    for name in WORKSPACE_FILES:
        assert (ws.project_dir / name).read_text() == (DEFAULTS / name).read_text()


def test_the_drawio_reference_example_parses_as_a_complete_diagram() -> None:
    root = ET.parse(EXAMPLE).getroot()
    assert root.tag == "mxfile"
    cells = root.findall("./diagram/mxGraphModel/root/mxCell")
    ids = {cell.get("id") for cell in cells}
    assert {"0", "1"} <= ids and len(ids) == len(cells)
    edges = [cell for cell in cells if cell.get("edge") == "1"]
    assert edges and all(e.get("source") in ids and e.get("target") in ids for e in edges)
    assert all(cell.get("parent") in ids for cell in cells if cell.get("id") != "0")


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECKER), str(path)], capture_output=True, text=True, timeout=30, check=False
    )


def test_the_drawio_checker_accepts_the_example() -> None:
    result = _check(EXAMPLE)
    assert result.returncode == 0 and result.stdout.strip().endswith(": ok")


def test_the_drawio_checker_reports_a_dangling_edge_and_missing_layer(tmp_path: Path) -> None:
    bad = tmp_path / "bad.drawio"
    bad.write_text(
        '<mxfile><diagram name="P"><mxGraphModel><root><mxCell id="0"/>'
        '<mxCell id="a" value="A" vertex="1" parent="0"><mxGeometry width="10" height="10" as="geometry"/>'
        '</mxCell><mxCell id="e" edge="1" parent="0" source="a" target="ghost">'
        '<mxGeometry relative="1" as="geometry"/></mxCell></root></mxGraphModel></diagram></mxfile>'
    )
    result = _check(bad)
    assert result.returncode == 1
    assert "target 'ghost' does not exist" in result.stdout
    assert 'mxCell id="1"' in result.stdout


def test_the_drawio_checker_reports_broken_xml(tmp_path: Path) -> None:
    bad = tmp_path / "broken.drawio"
    bad.write_text("<mxfile><diagram>")
    result = _check(bad)
    assert result.returncode == 1 and "not readable XML" in result.stdout
