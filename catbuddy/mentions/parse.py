"""Which files a message names: `@calc.py`, `@"docs/a b.md"`, `@src/` (a folder), `@~/notes.txt`, and
image paths pasted or dropped into the terminal (`/home/me/shot.png`, `'/tmp/Screen Shot.png'`).

A mention that names no existing file or folder stays plain text (an e-mail address, `@decorator`,
`@someone`). Trailing punctuation (`see @a.py.`) is not part of the name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from catbuddy.images import IMAGE_SUFFIXES

TRAILING = ".,;:!?)]}'\"`"
# `@` at the start or after a space or an opening bracket/quote; then "quoted" or a run of non-spaces.
MENTION_RE = re.compile(r"""(?:(?<=^)|(?<=[\s(\[{'"`]))@(?:"([^"\n]+)"|([^\s"]+))""")
_IMAGE_ALTERNATIVES = "|".join(s.lstrip(".") for s in IMAGE_SUFFIXES)
# Absolute image paths as terminals paste a dropped file: bare, 'quoted', or with `\ ` for spaces.
PASTED_IMAGE_RE = re.compile(
    rf"""(?:(?<=^)|(?<=\s))(?:'(/[^'\n]+\.(?:{_IMAGE_ALTERNATIVES}))'|((?:file://)?/(?:[^\s\\]|\\ )+\.(?:{_IMAGE_ALTERNATIVES})))(?=\s|$)""",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Mention:
    token: str  # as written in the message, e.g. `@calc.py` or `'/tmp/shot.png'`
    name: str  # the path as the user wrote it (no `@`, no quotes, no trailing punctuation)
    path: Path  # resolved (symlinks followed)
    is_dir: bool
    inside: bool  # inside the work root

    @property
    def is_image(self) -> bool:
        return not self.is_dir and self.path.suffix.lower() in IMAGE_SUFFIXES


def find_mentions(text: str, work_root: Path) -> list[Mention]:
    """The existing files and folders the message names, each once, in order of appearance."""
    root = work_root.resolve()
    found: list[Mention] = []
    seen: set[Path] = set()
    for match in MENTION_RE.finditer(text):
        quoted, bare = match.group(1), match.group(2)
        mention = _resolve(quoted, root, match.group(0)) if quoted else _resolve_trimmed(bare, root)
        if mention is not None and mention.path not in seen:
            seen.add(mention.path)
            found.append(mention)
    for match in PASTED_IMAGE_RE.finditer(text):
        raw = match.group(1) or match.group(2).replace("\\ ", " ").removeprefix("file://")
        mention = _resolve(raw, root, match.group(0))
        if mention is not None and not mention.is_dir and mention.path not in seen:
            seen.add(mention.path)
            found.append(mention)
    return found


def _resolve_trimmed(bare: str, root: Path) -> Mention | None:
    """`@a.py.` names a.py: strip trailing punctuation until something exists (or nothing is left)."""
    name = bare
    while name:
        mention = _resolve(name, root, f"@{name}")
        if mention is not None:
            return mention
        if name[-1] not in TRAILING:
            return None
        name = name[:-1]
    return None


def _resolve(name: str, root: Path, token: str) -> Mention | None:
    if not name or "\x00" in name:
        return None
    candidate = Path(os.path.expanduser(name))
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        if not candidate.exists():
            return None
        path = candidate.resolve()
        is_dir = path.is_dir()
    except (OSError, RuntimeError, ValueError):  # a loop of links, a name too long
        return None
    if not is_dir and not path.is_file():
        return None  # a socket, a device: nothing to attach
    return Mention(token, name.rstrip("/") or name, path, is_dir, path == root or path.is_relative_to(root))
