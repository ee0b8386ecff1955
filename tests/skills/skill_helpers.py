"""Helpers for writing skill folders in tests."""

from __future__ import annotations

from pathlib import Path

from catbuddy.workspace import Workspace


def make_workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "proj").mkdir(exist_ok=True)
    return Workspace(work_root=tmp_path / "proj", home=tmp_path / "home")


def write_skill(
    root: Path,
    name: str,
    description: str = "Does a thing.",
    body: str = "Instructions.",
    extra: str = "",
    frontmatter_name: str | None = None,
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    front = f"name: {frontmatter_name or name}\ndescription: {description}\n{extra}"
    path = folder / "SKILL.md"
    path.write_text(f"---\n{front}---\n{body}\n", encoding="utf-8")
    return path
