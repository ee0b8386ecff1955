"""The ledger reads each call's stored outcome (docs/architecture.md §5): status, exit code, the paths it
changed and its tool's facts — never the English text of the result. Results stored without one (older
sessions) are still read from their text (``test_ledger.py``)."""

from __future__ import annotations

import json
from typing import Any

from catbuddy.context.compaction.ledger import build_ledger, render_ledger
from catbuddy.session.history import HistoryEntry
from catbuddy.tool_meta import Change, FactKind, LedgerFact, PathChange, ToolMeta, ToolStatus


class Session:
    """Calls and their results with meta, numbered as a session file numbers them."""

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []

    def _add(self, message: dict[str, Any], meta: ToolMeta | None = None) -> None:
        self.entries.append(
            HistoryEntry(f"m{len(self.entries) + 1:06d}", message, meta.to_json() if meta else None)
        )

    def call(self, name: str, args: dict[str, Any], result: str, meta: ToolMeta | None) -> Session:
        call_id = f"c{len(self.entries)}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        self._add({"role": "assistant", "content": None, "tool_calls": [call]})
        self._add({"role": "tool", "tool_call_id": call_id, "content": result}, meta)
        return self


def ok(**kw: Any) -> ToolMeta:
    return ToolMeta(ToolStatus.OK, **kw)


def command(cmd: str, meta: ToolMeta, tail: str = "", test: str | None = None) -> ToolMeta:
    meta.facts = [LedgerFact(FactKind.COMMAND, cmd, tail)]
    if test is not None:
        meta.facts.append(LedgerFact(FactKind.TEST, cmd, test))
    return meta


def test_changed_files_come_from_the_paths_a_call_reports_not_from_its_text() -> None:
    s = Session()
    s.call("stamp", {}, "Created a.py", ok(paths=[PathChange("a.py", Change.CREATED, 10, 0)]))
    s.call(
        "stamp",
        {},
        "Edited a.py: replaced 3 occurrences",
        ok(paths=[PathChange("a.py", Change.MODIFIED, 2, 1)]),
    )
    s.call("stamp", {}, "Edited b.py: replaced 9 occurrences", ok())  # says it edited; reported nothing
    s.call("stamp", {}, "Overwrote c.bin", ok(paths=[PathChange("c.bin", Change.MODIFIED, 4, None)]))

    ledger = build_ledger(None, s.entries)

    a = ledger.changes["a.py"]
    assert (a.status, a.added, a.removed, a.edits, a.last_edit) == ("created", 12, 1, 2, "m000004")
    assert "b.py" not in ledger.changes
    c = ledger.changes["c.bin"]
    assert (c.status, c.added, c.removed_unknown) == ("modified", 4, True)


def test_a_deletion_and_a_move_reported_by_a_command_are_recorded() -> None:
    s = Session()
    s.call("stamp", {}, "", ok(paths=[PathChange("a.py", Change.CREATED, 3, 0)]))
    moved = [PathChange("a.py", Change.DELETED, moved_to="b.py"), PathChange("old.txt", Change.DELETED)]
    s.call(
        "exec",
        {"command": "mv a.py b.py && rm old.txt"},
        "(no output)",
        command("mv", ok(exit_code=0, paths=moved)),
    )

    ledger = build_ledger(None, s.entries)

    assert (ledger.changes["a.py"].status, ledger.changes["a.py"].moved_to) == ("deleted", "b.py")
    assert ledger.changes["b.py"].status == "created"
    assert ledger.changes["old.txt"].status == "deleted"


def test_commands_take_their_status_and_exit_code_from_the_outcome() -> None:
    s = Session()
    s.call("exec", {}, "whatever the text says", command("make", ok(exit_code=0)))
    s.call(
        "exec",
        {},
        "Exit code: 0",
        command("pytest -q", ToolMeta(ToolStatus.ERROR, exit_code=2), "E boom", "1 failed"),
    )
    s.call("exec", {}, "", command("sleep 99", ToolMeta(ToolStatus.TIMED_OUT), "partial"))
    s.call("exec", {}, "", command("yes", ToolMeta(ToolStatus.ERROR, exit_code=-9)))
    s.call(
        "exec", {}, "Refused by catbuddy's safety rules: …", command("rm -rf /", ToolMeta(ToolStatus.REFUSED))
    )

    ledger = build_ledger(None, s.entries)

    assert [(c.command, c.status, c.exit_code, c.tail) for c in ledger.commands] == [
        ("make", "ok", 0, ""),
        ("pytest -q", "failed", 2, "E boom"),
        ("sleep 99", "timeout", None, "partial"),
        ("yes", "killed", -9, ""),
        ("rm -rf /", "error", None, ""),
    ]
    assert [(t.command, t.status, t.summary) for t in ledger.tests] == [("pytest -q", "failed", "1 failed")]
    # A command that ran and failed is a command's status; a refused one is an error met.
    assert [(e.tool, e.text) for e in ledger.errors] == [("exec", "Refused by catbuddy's safety rules: …")]


def test_reads_urls_searches_skills_and_external_tools_come_from_the_tools_facts() -> None:
    s = Session()
    s.call("read_file", {}, "", ok(facts=[LedgerFact(FactKind.READ, "src/a.py")]))
    s.call("web_fetch", {}, "", ok(facts=[LedgerFact(FactKind.URL, "https://example.com/ ")]))
    s.call("web_search", {}, "", ok(facts=[LedgerFact(FactKind.SEARCH, "tiktoken  o200k")]))
    s.call("skill", {}, "", ok(facts=[LedgerFact(FactKind.SKILL, "drawio/references/x.drawio")]))
    for _ in range(2):
        s.call("mcp__git__git_log", {}, "", ok(facts=[LedgerFact(FactKind.EXTERNAL, "mcp__git__git_log")]))
    s.call("future_tool", {}, "", ok(facts=[LedgerFact("telepathy", "x")]))  # a kind this version ignores

    ledger = build_ledger(None, s.entries)

    assert list(ledger.reads) == ["src/a.py"]
    assert list(ledger.urls) == ["https://example.com/"]
    assert list(ledger.searches) == ["tiktoken o200k"]
    assert list(ledger.skills) == ["drawio/references/x.drawio"]
    assert ledger.mcp_tools == {"mcp__git__git_log": 2}
    assert ledger.malformed == [] and ledger.errors == []


def test_a_malformed_call_is_noted_with_what_was_wrong() -> None:
    s = Session().call("frobnicate", {}, "Error: there is no tool named 'frobnicate'.",
                       ToolMeta(ToolStatus.ERROR, malformed="unknown tool"))  # fmt: skip
    ledger = build_ledger(None, s.entries)
    assert [(m.tool, m.text) for m in ledger.malformed] == [("frobnicate", "unknown tool")]
    assert ledger.errors == []


def test_a_session_that_mixes_old_results_and_results_with_an_outcome_is_read_whole() -> None:
    s = Session()
    s.call("write_file", {"path": "a.py", "content": "x\n"}, "Created a.py (1 lines, 2 bytes).", None)
    s.call("stamp", {}, "", ok(paths=[PathChange("a.py", Change.MODIFIED, 1, 0)]))
    s.call("exec", {"command": "pytest"}, "1 passed\n\nExit code: 0", None)

    ledger = build_ledger(None, s.entries)

    change = ledger.changes["a.py"]
    assert (change.status, change.added, change.edits) == ("created", 2, 2)
    assert [(c.command, c.status) for c in ledger.commands] == [("pytest", "ok")]
    assert "created `a.py`: +2 −0 lines" in render_ledger(ledger)


def test_an_unreadable_outcome_falls_back_to_the_text() -> None:
    s = Session()
    s.call("exec", {"command": "make"}, "done\n\nExit code: 0", None)
    s.entries[-1].meta = {"status": "no such status"}
    assert [(c.command, c.status) for c in build_ledger(None, s.entries).commands] == [("make", "ok")]


def test_files_the_user_put_back_are_in_the_ledger_from_the_next_messages_meta() -> None:
    # Issue 26: /undo, /redo and /rewind are records, and the ledger notes them.
    restored = [
        {"action": "undo", "turns": ["t2"], "paths": ["b.txt"]},
        {"action": "redo", "turns": ["t2"], "paths": ["b.txt", "c.txt"]},
    ]
    entries = [HistoryEntry("m000009", {"role": "user", "content": "go on"}, {"restored": restored})]

    ledger = build_ledger(None, entries)
    again = build_ledger(ledger.to_dict(), [])  # stored as data: the next compaction merges it

    assert [(n.tool, n.id, n.text) for n in again.restores] == [
        ("undo", "m000009", "`b.txt` back as before turn t2"),
        ("redo", "m000009", "`b.txt`, `c.txt` back as after turn t2"),
    ]
    text = render_ledger(again)
    assert "Files the user put back (undo, redo, rewind; read them again before editing):" in text
    assert "- undo before m000009: `b.txt` back as before turn t2" in text


def test_a_user_message_meta_without_restores_adds_nothing() -> None:
    entries = [HistoryEntry("m000001", {"role": "user", "content": "hi"}, {"restored": "not a list"})]

    assert build_ledger(None, entries).empty
