"""Every memory write keeps the previous version first; changes can be listed, diffed and undone."""

from __future__ import annotations

import json

import pytest

from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.versions import KEEP_CHANGES, MemoryVersions, VersionError


@pytest.fixture
def versions(paths: MemoryPaths) -> MemoryVersions:
    return MemoryVersions(paths)


def test_a_write_keeps_the_previous_version_and_logs_a_line(versions: MemoryVersions, paths) -> None:
    paths.project_memory.parent.mkdir(parents=True, exist_ok=True)
    paths.project_memory.write_text("- a\n")
    change = versions.write({"project": "- a\n- b\n- c\n"}, source="dream", sessions=["s1", "s2"])
    assert change is not None and change.id == 1
    assert paths.project_memory.read_text() == "- a\n- b\n- c\n"
    assert (paths.versions / "000001-project.before.md").read_text() == "- a\n"
    line = json.loads(paths.versions_log.read_text())
    assert {k: line[k] for k in ("change", "source", "file", "sessions", "added", "removed")} == {
        "change": 1,
        "source": "dream",
        "file": "project",
        "sessions": ["s1", "s2"],
        "added": 2,
        "removed": 0,
    }
    assert line["at"] and line["path"] == str(paths.project_memory)


def test_writing_the_same_text_is_no_change(versions: MemoryVersions, paths) -> None:
    versions.write({"global": "- x\n"}, source="editor")
    assert versions.write({"global": "- x\n"}, source="editor") is None
    assert len(versions.history().changes) == 1


def test_one_change_groups_both_files_and_the_diff_shows_both(versions: MemoryVersions) -> None:
    versions.write({"global": "- likes tea\n", "project": "- uses make\n"}, source="dream")
    change, diff = versions.diff()
    assert [r.file for r in change.records] == ["global", "project"]
    assert "+- likes tea" in diff and "+- uses make" in diff
    assert "a/global/MEMORY.md" in diff


def test_undo_walks_back_one_change_at_a_time_and_is_itself_logged(versions: MemoryVersions, paths) -> None:
    original = paths.global_memory.read_text()  # the shipped template, from ensure_home
    versions.write({"global": "- one\n"}, source="dream")
    versions.write({"global": "- one\n- two\n"}, source="editor")
    first = versions.undo()
    assert first.undone.id == 2 and paths.global_memory.read_text() == "- one\n"
    second = versions.undo()
    assert second.undone.id == 1 and paths.global_memory.read_text() == original
    with pytest.raises(VersionError, match="nothing to undo"):
        versions.undo()
    sources = [c.source for c in versions.history().changes]
    assert sources == ["dream", "editor", "undo", "undo"]


def test_undoing_the_change_that_created_a_file_removes_it_again(versions: MemoryVersions, paths) -> None:
    assert not paths.project_memory.exists()
    versions.write({"project": "- created\n"}, source="dream")
    versions.undo()
    assert not paths.project_memory.exists()
    change, diff = versions.diff()
    assert change.source == "undo" and "-- created" in diff


def test_undo_after_a_later_hand_edit_says_so_and_keeps_that_text_as_a_version(versions, paths) -> None:
    versions.write({"project": "- by dream\n"}, source="dream")
    paths.project_memory.write_text("- by dream\n- by hand outside catbuddy\n")
    result = versions.undo()
    assert result.notes and "changed after change #1" in result.notes[0]
    assert result.change is not None
    kept, _ = versions.texts(result.change, "project")
    assert kept == "- by dream\n- by hand outside catbuddy\n"


def test_a_tool_write_is_versioned_around_the_write(versions: MemoryVersions, paths) -> None:
    paths.project_memory.parent.mkdir(parents=True, exist_ok=True)
    paths.project_memory.write_text("- old\n")
    pending = versions.begin(paths.project_memory, source="tool:edit_file", sessions=["s9"])
    assert pending is not None
    paths.project_memory.write_text("- new\n")
    change = pending.finish()
    assert change is not None and change.records[0].source == "tool:edit_file"
    before, after = versions.texts(change, "project")
    assert (before, after) == ("- old\n", "- new\n")


def test_a_tool_write_that_changed_nothing_leaves_no_trace(versions: MemoryVersions, paths) -> None:
    pending = versions.begin(paths.global_memory, source="tool:write_file")
    assert pending is not None and pending.finish() is None
    assert versions.history().changes == []
    assert not list(paths.versions.glob("*.before.md"))


def test_other_files_are_not_versioned(versions: MemoryVersions, workspace) -> None:
    assert versions.begin(workspace.work_root / "README.md", source="tool:write_file") is None


def test_diff_of_an_unknown_change_names_the_known_ones(versions: MemoryVersions) -> None:
    with pytest.raises(VersionError, match="no memory changes yet"):
        versions.diff()
    versions.write({"global": "- x\n"}, source="dream")
    with pytest.raises(VersionError, match=r"no change #7; changes are #1–#1"):
        versions.diff(7)


def test_a_corrupt_log_line_is_skipped_and_reported(versions: MemoryVersions, paths) -> None:
    versions.write({"global": "- x\n"}, source="dream")
    with paths.versions_log.open("a") as handle:
        handle.write("garbage\n")
    history = versions.history()
    assert len(history.changes) == 1 and "line 2: skipped" in history.problems[0]


def test_only_the_newest_changes_keep_their_copies(versions: MemoryVersions, paths, monkeypatch) -> None:
    monkeypatch.setattr("catbuddy.memory.versions.KEEP_CHANGES", 3)
    for n in range(5):
        versions.write({"global": f"- v{n}\n"}, source="editor")
    kept = sorted({p.name.split("-")[0] for p in paths.versions.glob("[0-9]*-*.md")})
    assert kept == ["000003", "000004", "000005"]
    with pytest.raises(VersionError, match="no longer kept"):
        versions.diff(1)
    assert KEEP_CHANGES >= 100
