"""The ledger of calls whose results were stored without ``meta``: sessions written before tool results
carried their outcome as data (docs/architecture.md §5).

Those results are read the only way they can be: from the text the tools of that time returned
("Created … (N lines, …)", "Edited …: replaced N occurrences", the exec trailer ``Exit code: N``, results
starting "Error:", …) — a fixed vocabulary, which is why the tools are named here and nowhere else in
the ledger. A call without any result (the process died) has no meta either and is read here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from catbuddy.context.compaction.ledger_exec import (
    exec_outcome,
    file_removals,
    is_test_command,
    output_tail,
    runner_verdict,
)
from catbuddy.context.compaction.ledger_model import LedgerWriter
from catbuddy.text import line_count, line_delta

# What the tools answered when a call did not do its job (tools/registry.run_tool, agent/tool_calls.py).
ERROR_PREFIXES = ("Error:", "Refused", "The user denied", "[Cancelled", "[Tool result unavailable")
UNKNOWN_TOOL_RE = re.compile(r"^Error: there is no tool named ")
EDITED_RE = re.compile(r"^Edited .*: replaced (\d+) occurrences?")
WROTE_RE = re.compile(r"^(Created|Overwrote|Wrote) .* \(([\d,]+) lines?, ")
READ_LINE_RE = re.compile(r"^ *\d+\t(.*)$")
MCP_PREFIX = "mcp__"

Handler = Callable[[LedgerWriter, dict[str, Any], str, bool, str], None]


def absorb_legacy(
    writer: LedgerWriter, name: str, args: dict[str, Any], result: str | None, mid: str
) -> None:
    """What one call adds to the ledger, read from its result text (None: the call got no result)."""
    if result is not None and UNKNOWN_TOOL_RE.match(result):
        writer.malformed(name, "unknown tool", mid)
        return
    failed = result is None or result.startswith(ERROR_PREFIXES)
    if result is None:
        writer.error(name, mid, "the call got no result (interrupted or lost)")
    elif failed:
        writer.error(name, mid, result)
    if name.startswith(MCP_PREFIX):
        writer.external(name)
        return
    handler = HANDLERS.get(name)
    if handler is not None:
        handler(writer, args, result or "", failed, mid)


def _read_file(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    if failed:
        return
    path = writer.read(args.get("path"), mid)
    whole = not args.get("offset") or args.get("offset") == 1
    if path and whole and "\n\n[Showing lines " not in result and "[... line cut" not in result:
        lines = [m.group(1) for line in result.split("\n") if (m := READ_LINE_RE.match(line))]
        writer.known[path] = "\n".join(lines) + ("\n" if lines else "")


def _write_file(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    path, content = writer.path(args.get("path")), args.get("content")
    match = WROTE_RE.match(result)
    if failed or not path or not isinstance(content, str) or match is None:
        return
    verb = match.group(1)
    if verb == "Wrote":  # "the content was unchanged"
        writer.known[path] = content
        return
    if verb == "Created":
        added, removed, unknown = line_count(content), 0, False
        status = writer.status_after(path, created=True)
    else:
        before = writer.known.get(path)
        unknown = before is None
        added, removed = line_delta(before, content) if before is not None else (line_count(content), 0)
        status = writer.status_after(path, created=False)
    writer.change(path, status, added, removed, mid, unknown=unknown)
    writer.known[path] = content


def _edit_file(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    path, old, new = writer.path(args.get("path")), args.get("old_string"), args.get("new_string")
    match = EDITED_RE.match(result)
    if failed or not path or not isinstance(old, str) or not isinstance(new, str) or match is None:
        return
    times = int(match.group(1))
    added, removed = line_delta(old, new)
    writer.change(path, writer.status_after(path, created=False), added * times, removed * times, mid)
    if path in writer.known:
        known = writer.known[path]
        writer.known[path] = (
            known.replace(old, new) if args.get("replace_all") else known.replace(old, new, 1)
        )


def _exec(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        return
    if result == "":
        status, code, output = "no result", None, ""
    else:
        outcome = exec_outcome(result, failed)
        status, code, output = outcome.status, outcome.exit_code, outcome.output
    writer.command(command, status, code, output_tail(output), mid)
    if is_test_command(command) and status != "error":
        writer.test(command, status, code, runner_verdict(output), mid)
    if status == "ok":
        for removed_path, moved_to in file_removals(command):
            writer.removed(removed_path, moved_to, mid)


def _web_fetch(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    url = args.get("url")
    if isinstance(url, str):
        writer.url(url, mid)


def _web_search(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    query = args.get("query")
    if isinstance(query, str):
        writer.search(query, mid)


def _skill(writer: LedgerWriter, args: dict[str, Any], result: str, failed: bool, mid: str) -> None:
    name = args.get("name")
    if failed or not isinstance(name, str) or not name.strip():
        return
    file = args.get("file")
    writer.skill(name.strip() + (f"/{file}" if isinstance(file, str) and file else ""), mid)


# The tools of the sessions this reads, by the names they had then.
HANDLERS: dict[str, Handler] = {
    "read_file": _read_file,
    "write_file": _write_file,
    "edit_file": _edit_file,
    "exec": _exec,
    "web_fetch": _web_fetch,
    "web_search": _web_search,
    "skill": _skill,
}
