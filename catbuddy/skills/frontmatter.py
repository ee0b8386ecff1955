"""Parse and check the YAML frontmatter of a SKILL.md (the Agent Skills format).

A SKILL.md starts with a ``---`` line, YAML, a closing ``---`` line, then the Markdown body.
Checking is strict so that a broken skill is reported with the reason instead of half-loading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from catbuddy.errors import CatbuddyError

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*$")
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
MAX_COMPATIBILITY_LENGTH = 500
FENCE = "---"


class FrontmatterError(CatbuddyError, ValueError):
    """What is wrong with a SKILL.md, phrased so the author knows what to fix."""


@dataclass(frozen=True)
class SkillHeader:
    """The checked frontmatter fields plus the body that follows them."""

    name: str
    description: str
    body: str
    always: bool = False
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)
    allowed_tools: list[str] = field(default_factory=list, hash=False)


def split_frontmatter(text: str) -> tuple[str, str]:
    """Return (yaml text, body). Raises FrontmatterError when there is no fenced frontmatter."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        raise FrontmatterError("no YAML frontmatter: the file must start with a '---' line")
    for index in range(1, len(lines)):
        if lines[index].strip() == FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :]).strip("\n")
    raise FrontmatterError("the YAML frontmatter is not closed by a second '---' line")


def parse_skill_text(text: str, folder_name: str) -> SkillHeader:
    """Parse a SKILL.md's text and check it against the folder it lives in."""
    raw_yaml, body = split_frontmatter(text)
    import yaml  # at the first frontmatter parsed: PyYAML costs ~12 ms to import

    try:
        data = yaml.safe_load(raw_yaml)
    except yaml.YAMLError as exc:
        raise FrontmatterError(f"invalid YAML in frontmatter: {_one_line(str(exc))}") from exc
    if not isinstance(data, dict):
        raise FrontmatterError("the frontmatter must be a YAML mapping with 'name' and 'description'")

    name = _check_name(data.get("name"), folder_name)
    description = _check_description(data.get("description"))
    always = data.get("always", False)
    if not isinstance(always, bool):
        raise FrontmatterError(f"'always' must be true or false, got {always!r}")
    return SkillHeader(
        name=name,
        description=description,
        body=body,
        always=always,
        license=_optional_text(data, "license"),
        compatibility=_optional_text(data, "compatibility", MAX_COMPATIBILITY_LENGTH),
        metadata=_check_metadata(data.get("metadata")),
        allowed_tools=_check_allowed_tools(data.get("allowed-tools", data.get("allowed_tools"))),
    )


def _check_name(name: Any, folder_name: str) -> str:
    if name is None:
        raise FrontmatterError("missing 'name' in frontmatter")
    if not isinstance(name, str) or not name:
        raise FrontmatterError(f"'name' must be a non-empty string, got {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise FrontmatterError(f"'name' is {len(name)} characters; the limit is {MAX_NAME_LENGTH}")
    if not NAME_PATTERN.match(name):
        raise FrontmatterError(
            f"'name' {name!r} may only use lowercase letters, digits and '-', starting with a letter or digit"
        )
    if name != folder_name:
        raise FrontmatterError(
            f"'name' {name!r} does not match its folder {folder_name!r}; rename one of them"
        )
    return name


def _check_description(description: Any) -> str:
    if description is None:
        raise FrontmatterError("missing 'description' in frontmatter")
    if not isinstance(description, str) or not description.strip():
        raise FrontmatterError("'description' must be a non-empty string saying what the skill does and when")
    description = " ".join(description.split())  # folded YAML may carry newlines; the catalog is one line
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise FrontmatterError(
            f"'description' is {len(description)} characters; the limit is {MAX_DESCRIPTION_LENGTH}"
        )
    return description


def _optional_text(data: dict[str, Any], key: str, limit: int | None = None) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise FrontmatterError(f"'{key}' must be a string, got {value!r}")
    if limit is not None and len(value) > limit:
        raise FrontmatterError(f"'{key}' is {len(value)} characters; the limit is {limit}")
    return value


def _check_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FrontmatterError(f"'metadata' must be a mapping of keys to values, got {value!r}")
    return {str(key): item for key, item in value.items()}


def _check_allowed_tools(value: Any) -> list[str]:
    # The Agent Skills spec writes this as one space-separated string; a YAML list is accepted too.
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise FrontmatterError(
        f"'allowed-tools' must be a space-separated string or a list of strings, got {value!r}"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())
