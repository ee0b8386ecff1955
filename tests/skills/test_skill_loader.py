from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from skill_helpers import make_workspace, write_skill

from catbuddy.skills.loader import (
    MAX_BUNDLED_FILES,
    discover_skills,
    format_skills_table,
    skill_fingerprint_paths,
)
from catbuddy.workspace import Workspace

SHIPPED = {"drawio", "github", "memory", "my"}


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path)


def test_with_no_user_skills_only_the_shipped_set_is_found(ws: Workspace) -> None:
    catalog = discover_skills(ws)
    assert set(catalog.names()) == SHIPPED
    assert {skill.source for skill in catalog.all()} == {"shipped"}


@pytest.mark.parametrize(
    ("root_attr", "source"),
    [("global_skills_dir", "global"), ("project_skills_dir", "project"), ("agents_skills_dir", "agents")],
)
def test_a_skill_is_discovered_from_each_location(ws: Workspace, root_attr: str, source: str) -> None:
    path = write_skill(
        getattr(ws, root_attr), "deploy", description="Deploy the app.", body="Run make deploy."
    )
    skill = discover_skills(ws).get("deploy")
    assert skill is not None
    assert (skill.source, skill.description, skill.body) == (source, "Deploy the app.", "Run make deploy.")
    assert skill.path == path and skill.directory == path.parent
    assert skill.always is False


def test_optional_spec_fields_are_read(ws: Workspace) -> None:
    extra = (
        "always: true\nlicense: MIT\ncompatibility: Needs git\n"
        "metadata:\n  author: me\nallowed-tools: exec read_file\n"
    )
    write_skill(ws.project_skills_dir, "full", extra=extra)
    skill = discover_skills(ws).get("full")
    assert skill is not None
    assert skill.always is True
    assert (skill.license, skill.compatibility, skill.metadata) == ("MIT", "Needs git", {"author": "me"})
    assert skill.allowed_tools == ["exec", "read_file"]


def test_always_on_and_on_demand_split_the_catalog(ws: Workspace) -> None:
    write_skill(ws.project_skills_dir, "aaa", extra="always: true\n")
    catalog = discover_skills(ws)
    assert [s.name for s in catalog.always_on()] == ["aaa", "memory", "my"]
    assert [s.name for s in catalog.on_demand()] == ["drawio", "github"]
    assert [s.name for s in catalog.all()] == sorted(SHIPPED | {"aaa"})


def test_a_global_skill_shadows_a_shipped_one(ws: Workspace) -> None:
    write_skill(ws.global_skills_dir, "github", description="My own GitHub way.")
    catalog = discover_skills(ws)
    skill = catalog.get("github")
    assert skill is not None and skill.source == "global"
    assert [(e.hidden.source, e.winner.source) for e in catalog.shadowed] == [("shipped", "global")]


def test_a_project_skill_shadows_global_and_shipped(ws: Workspace) -> None:
    write_skill(ws.global_skills_dir, "memory", description="Global memory.")
    write_skill(ws.project_skills_dir, "memory", description="Project memory.")
    catalog = discover_skills(ws)
    skill = catalog.get("memory")
    assert skill is not None and (skill.source, skill.description) == ("project", "Project memory.")
    assert [(e.hidden.source, e.winner.source) for e in catalog.shadowed] == [
        ("shipped", "global"),
        ("global", "project"),
    ]


def test_catbuddy_skills_beats_agents_skills_and_agents_beats_global(ws: Workspace) -> None:
    write_skill(ws.global_skills_dir, "lint", description="global")
    write_skill(ws.agents_skills_dir, "lint", description="agents")
    write_skill(ws.agents_skills_dir, "fmt", description="agents")
    write_skill(ws.global_skills_dir, "fmt", description="global")
    write_skill(ws.project_skills_dir, "lint", description="catbuddy")
    catalog = discover_skills(ws)
    assert catalog.get("lint").description == "catbuddy"  # type: ignore[union-attr]
    assert catalog.get("fmt").description == "agents"  # type: ignore[union-attr]


def test_a_folder_without_skill_md_is_ignored_silently(
    ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    (ws.project_skills_dir / "notes").mkdir(parents=True)
    (ws.project_skills_dir / "notes" / "README.md").write_text("hi")
    with caplog.at_level(logging.WARNING):
        catalog = discover_skills(ws)
    assert "notes" not in catalog and not catalog.problems and not caplog.records


def test_a_missing_skills_root_is_not_an_error(tmp_path: Path) -> None:
    ws = Workspace(work_root=tmp_path / "nowhere", home=tmp_path / "nohome")
    catalog = discover_skills(ws)
    assert set(catalog.names()) == SHIPPED and not catalog.problems


def test_a_broken_skill_does_not_hide_its_shipped_namesake(ws: Workspace) -> None:
    folder = ws.project_skills_dir / "drawio"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("no frontmatter here")
    catalog = discover_skills(ws)
    skill = catalog.get("drawio")
    assert skill is not None and skill.source == "shipped"
    assert len(catalog.problems) == 1


def test_bundled_files_lists_everything_but_skill_md_sorted(ws: Workspace) -> None:
    path = write_skill(ws.project_skills_dir, "kit")
    for rel in ("scripts/run.sh", "references/a.md", "assets/t.drawio", "notes.txt", ".hidden", "x/.git/c"):
        (path.parent / rel).parent.mkdir(parents=True, exist_ok=True)
        (path.parent / rel).write_text("x")
    skill = discover_skills(ws).get("kit")
    assert skill is not None
    assert skill.bundled_files() == ["assets/t.drawio", "notes.txt", "references/a.md", "scripts/run.sh"]


def test_bundled_files_are_capped(ws: Workspace) -> None:
    path = write_skill(ws.project_skills_dir, "big")
    (path.parent / "assets").mkdir()
    for index in range(MAX_BUNDLED_FILES + 5):
        (path.parent / "assets" / f"f{index:04d}.txt").write_text("x")
    skill = discover_skills(ws).get("big")
    assert skill is not None
    assert len(skill.bundled_files()) == MAX_BUNDLED_FILES
    assert skill.bundled_files(limit=3) == ["assets/f0000.txt", "assets/f0001.txt", "assets/f0002.txt"]


def _stat_all(paths: list[Path]) -> list[tuple[str, int, int]]:
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((str(path), st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            out.append((str(path), -1, -1))
    return out


def test_fingerprint_paths_cover_roots_skill_dirs_and_skill_files(ws: Workspace) -> None:
    path = write_skill(ws.project_skills_dir, "deploy")
    paths = skill_fingerprint_paths(ws)
    assert {ws.project_skills_dir, ws.global_skills_dir, ws.agents_skills_dir} <= set(paths)
    assert path in paths and path.parent in paths


def test_fingerprint_changes_when_a_skill_dir_is_added(ws: Workspace) -> None:
    ws.project_skills_dir.mkdir(parents=True)
    before = _stat_all(skill_fingerprint_paths(ws))
    write_skill(ws.project_skills_dir, "newone")
    assert _stat_all(skill_fingerprint_paths(ws)) != before


def test_fingerprint_changes_when_a_skills_root_is_created(ws: Workspace) -> None:
    before = _stat_all(skill_fingerprint_paths(ws))
    ws.agents_skills_dir.mkdir(parents=True)
    assert _stat_all(skill_fingerprint_paths(ws)) != before


def test_fingerprint_changes_when_a_skill_md_is_edited(ws: Workspace) -> None:
    path = write_skill(ws.project_skills_dir, "deploy", body="short")
    before = _stat_all(skill_fingerprint_paths(ws))
    path.write_text(path.read_text() + "more instructions\n")
    assert _stat_all(skill_fingerprint_paths(ws)) != before


def test_skills_table_lists_name_source_mode_and_description(ws: Workspace) -> None:
    write_skill(ws.project_skills_dir, "deploy", description="Deploy the app to staging.")
    table = format_skills_table(discover_skills(ws)).splitlines()
    assert table[0].split() == ["NAME", "SOURCE", "MODE", "DESCRIPTION"]
    row = next(line for line in table if line.startswith("deploy"))
    assert row.split()[:3] == ["deploy", "project", "on-demand"]
    assert row.endswith("Deploy the app to staging.")
    memory_row = next(line for line in table if line.startswith("memory "))
    assert memory_row.split()[:3] == ["memory", "shipped", "always"]


def test_skills_table_lists_problems_with_file_and_message(ws: Workspace) -> None:
    path = write_skill(ws.project_skills_dir, "broken", frontmatter_name="other")
    write_skill(ws.project_skills_dir, "github", description="mine")
    text = format_skills_table(discover_skills(ws))
    assert "Problems" in text
    assert f"{path}: 'name' 'other' does not match its folder 'broken'" in text
    assert "Shadowed:" in text and "github (shipped" in text


def test_skills_table_clips_long_descriptions(ws: Workspace) -> None:
    write_skill(ws.project_skills_dir, "wordy", description="word " * 100)
    row = next(
        line for line in format_skills_table(discover_skills(ws)).splitlines() if line.startswith("wordy")
    )
    assert row.endswith("…") and len(row) < 140
