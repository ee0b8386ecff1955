"""HTML comments out of instruction files: notes for the person editing a file, not for the model.

The shipped workspace files explain themselves in ``<!-- … -->`` comments; sent as they are, those notes
would ride along in every request (~250 tokens of the defaults alone). A comment inside a fenced code
block is code, and stays; an unterminated ``<!--`` is left alone, as Markdown renderers show it.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_GONE = "\x00"  # marks where a comment was, so lines left holding nothing else can be dropped
_BLANK_RUN = re.compile(r"\n{3,}")


def strip_html_comments(text: str) -> str:
    if "<!--" not in text:
        return text
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opener = _FENCE.match(line)
        if fence is None and opener:
            out.append(_strip(prose))
            prose = []
            fence = opener.group(1)[0] * len(opener.group(1))
            out.append(line)
        elif fence is not None:
            out.append(line)
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
        else:
            prose.append(line)
    out.append(_strip(prose))
    return "".join(out)


def _strip(lines: list[str]) -> str:
    if not lines:
        return ""
    text = _COMMENT.sub(_GONE, "".join(lines))
    if _GONE not in text:
        return text
    kept = [line for line in text.splitlines(keepends=True) if line.replace(_GONE, "").strip() or _GONE not in line]
    return _BLANK_RUN.sub("\n\n", "".join(kept).replace(_GONE, ""))
