"""The `recall` tool: search the raw messages of this session — folded, snipped and microcompacted
ones included — by words or a regex, and show the best few snippets within a token cap
(docs/architecture.md §5, §8). ``scope: "project"`` searches this project's other sessions too,
newest first. The search itself (streamed, bytes first) is ``session/search.py``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from catbuddy.safety.kinds import ToolKind
from catbuddy.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    from catbuddy.session.search import Hit, Query

DEFAULT_RESULTS = 5
MAX_RESULTS = 20
SUBAGENTS_DIR = "subagents"  # under the sessions folder: subagents/<session id>/<child session>.jsonl
SNIPPET_CHARS = 360
MAX_TERMS = 12
MIN_TERM_CHARS = 2
TERM_RE = re.compile(r'"([^"]+)"|(\S+)')
WORD_EDGE_RE = re.compile(r"^\W+|\W+$")


class RecallTool(Tool):
    name = "recall"
    parameters = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": 'Words ("a phrase" in quotes), or a regex.'},
            "regex": {"type": "boolean", "description": "query is a Python regex"},
            "scope": {"type": "string", "enum": ["session", "project"]},
            "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
            "max_results": {"type": "integer", "description": f"1-{MAX_RESULTS}, default {DEFAULT_RESULTS}"},
        },
        "required": ["query"],
    }
    kind = ToolKind.READ
    microcompactable = True

    def summary(self, args: Mapping[str, Any]) -> str:
        return str(args.get("query", ""))[:200]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query = parse_query(args)
        scope = args.get("scope") or "session"
        if scope not in ("session", "project"):
            raise ToolError(f'`scope` must be "session" or "project", got {scope!r}.')
        limit = args.get("max_results")
        limit = DEFAULT_RESULTS if limit is None else limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_RESULTS:
            raise ToolError(f"`max_results` must be an integer from 1 to {MAX_RESULTS}, got {limit!r}.")
        files = session_files(ctx, scope)
        return await asyncio.to_thread(_search_and_render, files, query, limit, ctx, scope)


def parse_query(args: Mapping[str, Any]) -> Query:
    # The session search is imported at the first recall, not with the tool list.
    from catbuddy.session.search import Query

    text = args.get("query")
    if not isinstance(text, str) or not text.strip():
        raise ToolError("`query` must be a non-empty string: words to find, or a regex with regex=true.")
    role = args.get("role") or ""
    if role not in ("", "user", "assistant", "tool"):
        raise ToolError(f'`role` must be "user", "assistant" or "tool", got {role!r}.')
    if args.get("regex"):
        try:
            pattern = re.compile(text)
        except re.error as exc:
            raise ToolError(
                f"the regex {text!r} does not compile: {exc}. Fix it, or search words with regex=false."
            ) from None
        return Query(pattern=pattern, role=role, skip_tool=RecallTool.name)
    terms: list[str] = []
    for match in TERM_RE.finditer(text):
        term = (match.group(1) or WORD_EDGE_RE.sub("", match.group(2))).strip().lower()
        if len(term) >= MIN_TERM_CHARS and term not in terms:
            terms.append(term)
    if not terms:
        raise ToolError(f"`query` {text!r} has no word of {MIN_TERM_CHARS} or more characters to search for.")
    return Query(terms=terms[:MAX_TERMS], role=role, skip_tool=RecallTool.name)


def session_files(ctx: ToolContext, scope: str) -> list[tuple[str, Path]]:
    """(session id, file) to search: this session first, then (project scope) the others, newest first."""
    if ctx.sessions_dir is None or ctx.session_id is None:
        raise ToolError("recall has no session to search: it works inside a catbuddy session.")
    current = ctx.sessions_dir / f"{ctx.session_id}.jsonl"
    files = [(ctx.session_id, current)]
    # The transcripts of this session's subagents (agent/subagent.py): their whole answers and findings.
    children = ctx.sessions_dir / SUBAGENTS_DIR / ctx.session_id
    if children.is_dir():
        files += [(p.stem, p) for p in sorted(children.glob("*.jsonl"))]
    if scope == "project" and ctx.sessions_dir.is_dir():
        others = [p for p in ctx.sessions_dir.glob("*.jsonl") if p != current]
        others.sort(key=lambda p: p.stat().st_mtime if p.exists() else 0, reverse=True)
        files += [(p.stem, p) for p in others]
    return files


# --- searching ------------------------------------------------------------------------------------


def _search_and_render(
    files: list[tuple[str, Path]], query: Query, limit: int, ctx: ToolContext, scope: str
) -> ToolResult:
    from catbuddy.context.counting.tokens import counter_for
    from catbuddy.session.search import search_sessions

    hits, stats = search_sessions(files, query)
    current = files[0][0]
    what = (
        f"the regex {query.pattern.pattern!r}"
        if query.pattern is not None
        else " ".join(f'"{t}"' if " " in t else t for t in query.terms)
    )
    where = (
        f"{stats.messages:,} messages of this session"
        if scope == "session"
        else f"{stats.messages:,} messages in {stats.sessions} session{'s' if stats.sessions != 1 else ''} of this project"
    )
    if not hits:
        return ToolResult(f"recall: nothing matches {what} among {where}.", meta={"matches": 0})
    counter = counter_for(ctx.settings.encoding_for())
    cap = ctx.settings.context.recall_max_tokens
    header = f"recall: {len(hits):,} message{'s' if len(hits) != 1 else ''} match {what} among {where}."
    used = counter.count_text(header)
    blocks: list[str] = []
    for number, hit in enumerate(hits[:limit], start=1):
        block = _render_hit(number, hit, current, stats.messages if scope == "session" else 0)
        size = counter.count_text(block)
        if blocks and used + size > cap:
            break
        blocks.append(block)
        used += size
    shown = len(blocks)
    tail = ""
    if len(hits) > shown:
        tail = f"\n\n({len(hits) - shown:,} more not shown; narrow the query, or raise max_results.)"
    best = f" The best {shown}:" if shown > 1 else ""
    return ToolResult(
        header + best + "\n\n" + "\n\n".join(blocks) + tail, meta={"matches": len(hits), "shown": shown}
    )


def _render_hit(number: int, hit: Hit, current: str, total: int) -> str:
    role = f"tool result ({hit.tool})" if hit.role == "tool" and hit.tool else hit.role
    where = f"message {hit.position:,}" + (f" of {total:,}" if total else "")
    parts = [f"[{number}] {hit.id}", role, where]
    if hit.session != current:
        parts.append(f"session {hit.session}")
    elif hit.folded:
        parts.append("folded (not in your context)")
    return " · ".join(parts) + "\n" + snippet(hit.text, hit.start, hit.end)


def snippet(text: str, start: int, end: int, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around ``[start, end)``, cut at spaces, marked with …."""
    before = max(0, start - width // 3)
    after = min(len(text), max(end, start + 1) + width - (start - before))
    if before > 0:
        space = text.find(" ", before, min(start, before + 30))
        before = space + 1 if space >= 0 else before
    if after < len(text):
        space = text.rfind(" ", max(end, after - 30), after)
        after = space if space >= 0 else after
    body = re.sub(r"\n{3,}", "\n\n", text[before:after].strip("\n"))
    return ("…" if before > 0 else "") + body + ("…" if after < len(text) else "")
