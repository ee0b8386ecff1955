"""Places on disk and `catbuddy init`."""

from __future__ import annotations

from pathlib import Path

from catbuddy.workspace import Workspace, default_home, is_default_memory, project_slug, shipped_default


def test_init_creates_the_workspace_from_defaults(workspace: Workspace) -> None:
    created = workspace.init_project()
    for name in ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "MEMORY.md"):
        path = workspace.project_dir / name
        assert path in created
        assert path.read_text() == shipped_default(name)
    assert workspace.project_skills_dir.is_dir()


def test_init_never_overwrites(workspace: Workspace) -> None:
    workspace.project_dir.mkdir()
    (workspace.project_dir / "SOUL.md").write_text("my own soul")
    workspace.init_project()
    assert (workspace.project_dir / "SOUL.md").read_text() == "my own soul"
    assert workspace.init_project() == []


def test_root_agents_md_is_preferred_and_not_duplicated(workspace: Workspace) -> None:
    (workspace.work_root / "AGENTS.md").write_text("root rules")
    workspace.init_project()
    assert not (workspace.project_dir / "AGENTS.md").exists()
    assert workspace.bootstrap_path("AGENTS.md") == workspace.work_root / "AGENTS.md"


def test_global_home_created_on_first_use(workspace: Workspace) -> None:
    workspace.ensure_home()
    assert (workspace.global_workspace / "USER.md").is_file()
    assert (workspace.global_workspace / "MEMORY.md").is_file()
    assert workspace.global_skills_dir.is_dir()


def test_home_comes_from_catbuddy_home(tmp_path: Path) -> None:
    assert default_home({"CATBUDDY_HOME": str(tmp_path)}) == tmp_path.resolve()


def test_sessions_live_in_the_home_not_the_repo(workspace: Workspace) -> None:
    assert workspace.sessions_dir.is_relative_to(workspace.home)
    assert not workspace.sessions_dir.is_relative_to(workspace.work_root)


def test_slugs_differ_for_different_roots(tmp_path: Path) -> None:
    assert project_slug(tmp_path / "a-b") != project_slug(tmp_path / "a" / "b")


def test_default_memory_detected() -> None:
    assert is_default_memory(shipped_default("MEMORY.md") + "\n")
    assert not is_default_memory(shipped_default("MEMORY.md") + "\n- 2026-12-01: uses uv")
