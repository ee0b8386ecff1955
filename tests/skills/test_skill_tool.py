from __future__ import annotations

from pathlib import Path

import pytest
from skill_helpers import make_workspace, write_skill

from catbuddy.config import Settings
from catbuddy.safety.kinds import ToolKind
from catbuddy.skills.loader import discover_skills
from catbuddy.tools.base import ToolContext, ToolError
from catbuddy.tools.skill import MAX_BODY_CHARS, SkillTool
from catbuddy.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path)


def _ctx(ws: Workspace, with_catalog: bool = True) -> ToolContext:
    return ToolContext(
        workspace=ws, settings=Settings(), skills=discover_skills(ws) if with_catalog else None
    )


def _kit(ws: Workspace) -> Path:
    path = write_skill(ws.project_skills_dir, "kit", description="A kit.", body="# Kit\n\nUse the template.")
    (path.parent / "assets").mkdir()
    (path.parent / "assets" / "template.txt").write_text("TEMPLATE BODY")
    (path.parent / "scripts").mkdir()
    (path.parent / "scripts" / "run.sh").write_text("echo hi")
    return path


def test_the_tool_is_a_read_only_tool_named_skill_requiring_a_name() -> None:
    tool = SkillTool()
    schema = tool.schema()["function"]
    assert (tool.name, tool.kind, tool.read_only) == ("skill", ToolKind.READ, True)
    assert schema["parameters"]["required"] == ["name"]
    assert "before" in tool.description.lower()


async def test_loading_a_skill_returns_header_directory_body_and_bundled_files(ws: Workspace) -> None:
    path = _kit(ws)
    result = await SkillTool().run({"name": "kit"}, _ctx(ws))
    lines = result.content.splitlines()
    assert lines[0] == "# Skill: kit"
    assert str(path.parent) in lines[1]
    assert "# Kit\n\nUse the template." in result.content
    assert "- assets/template.txt" in result.content and "- scripts/run.sh" in result.content
    assert "SKILL.md" not in result.content.split("Bundled files")[1].split(")", 1)[1]
    assert result.meta["skill"] == "kit" and not result.is_error


async def test_a_skill_without_bundled_files_has_no_files_section(ws: Workspace) -> None:
    write_skill(ws.project_skills_dir, "plain", body="Just do it.")
    result = await SkillTool().run({"name": "plain"}, _ctx(ws))
    assert "Bundled files" not in result.content and result.content.endswith("Just do it.")


async def test_without_a_catalog_in_the_context_the_tool_discovers_skills(ws: Workspace) -> None:
    _kit(ws)
    result = await SkillTool().run({"name": "kit"}, _ctx(ws, with_catalog=False))
    assert result.content.startswith("# Skill: kit")


async def test_a_shipped_skill_loads(ws: Workspace) -> None:
    result = await SkillTool().run({"name": "drawio"}, _ctx(ws))
    assert "mxGraphModel" in result.content and "- references/example.drawio" in result.content


async def test_names_are_matched_leniently(ws: Workspace) -> None:
    result = await SkillTool().run({"name": " /DrawIO "}, _ctx(ws))
    assert result.content.startswith("# Skill: drawio")


async def test_an_unknown_skill_suggests_the_closest_and_lists_all(ws: Workspace) -> None:
    with pytest.raises(ToolError) as info:
        await SkillTool().run({"name": "drawoi"}, _ctx(ws))
    message = str(info.value)
    assert "Unknown skill 'drawoi'" in message and "Did you mean 'drawio'" in message
    assert "drawio, github, memory, my" in message


async def test_an_unknown_skill_with_nothing_close_only_lists_skills(ws: Workspace) -> None:
    with pytest.raises(ToolError) as info:
        await SkillTool().run({"name": "kubernetes"}, _ctx(ws))
    assert "Did you mean" not in str(info.value) and "Available skills: drawio" in str(info.value)


async def test_a_missing_name_is_an_error_listing_skills(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="`name` is required: one of drawio"):
        await SkillTool().run({}, _ctx(ws))


async def test_a_bundled_file_can_be_read_through_the_tool(ws: Workspace) -> None:
    _kit(ws)
    result = await SkillTool().run({"name": "kit", "file": "assets/template.txt"}, _ctx(ws))
    assert result.content.endswith("TEMPLATE BODY")
    assert "kit/assets/template.txt" in result.content


async def test_reading_outside_the_skill_folder_is_refused(ws: Workspace) -> None:
    _kit(ws)
    (ws.project_skills_dir / "secret.txt").write_text("no")
    with pytest.raises(ToolError, match="outside the skill's folder"):
        await SkillTool().run({"name": "kit", "file": "../secret.txt"}, _ctx(ws))


async def test_a_missing_bundled_file_lists_the_real_ones(ws: Workspace) -> None:
    _kit(ws)
    with pytest.raises(ToolError, match=r"no file 'assets/nope.txt'\. Its files: assets/template.txt"):
        await SkillTool().run({"name": "kit", "file": "assets/nope.txt"}, _ctx(ws))


async def test_a_huge_body_is_cut_with_a_note(ws: Workspace) -> None:
    write_skill(ws.project_skills_dir, "huge", body="x" * (MAX_BODY_CHARS + 500))
    result = await SkillTool().run({"name": "huge"}, _ctx(ws))
    assert result.content.count("x") < MAX_BODY_CHARS + 100
    assert "file='SKILL.md'" in result.content


def test_summary_shows_the_name_and_file() -> None:
    assert SkillTool().summary({"name": "kit", "file": "a.txt"}) == "kit/a.txt"
    assert SkillTool().summary({"name": "kit"}) == "kit"
