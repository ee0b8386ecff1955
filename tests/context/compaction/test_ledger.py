"""The compaction ledger (docs/architecture.md §5): what code knows about the folded messages, merged
across compactions, bounded, rendered — and never broken by a malformed call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catbuddy.context.compaction.ledger import Ledger, bound_ledger, build_ledger, render_ledger
from catbuddy.context.compaction.ledger_exec import (
    exec_outcome,
    file_removals,
    is_test_command,
    runner_verdict,
)
from catbuddy.context.counting.tokens import counter_for
from catbuddy.session.history import HistoryEntry

COUNTER = counter_for("o200k_base")


class Session:
    """Builds a folded history: calls and their results, numbered as a session file numbers them."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.calls = 0

    def user(self, text: str) -> Session:
        self.messages.append({"role": "user", "content": text})
        return self

    def call(self, name: str, args: dict[str, Any] | str, result: str | None) -> Session:
        self.calls += 1
        arguments = args if isinstance(args, str) else json.dumps(args)
        call = {"id": f"c{self.calls}", "type": "function", "function": {"name": name, "arguments": arguments}}
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        if result is not None:
            self.messages.append({"role": "tool", "tool_call_id": f"c{self.calls}", "content": result})
        return self

    def entries(self, start: int = 1) -> list[HistoryEntry]:
        return [HistoryEntry(f"m{i:06d}", m) for i, m in enumerate(self.messages, start=start)]


def exec_result(output: str, code: int) -> str:
    return f"{output}\n\nExit code: {code}"


# --- files ------------------------------------------------------------------------------------------


def test_created_and_edited_files_count_net_lines_and_the_last_edit() -> None:
    s = Session().user("make it")
    s.call("write_file", {"path": "src/app.py", "content": "a\nb\nc\n"}, "Created src/app.py (3 lines, 6 bytes).")
    s.call(
        "edit_file",
        {"path": "src/app.py", "old_string": "b\n", "new_string": "B\nB2\n"},
        "Edited src/app.py: replaced 1 occurrence (first at line 2).\n\n--- diff",
    )
    ledger = build_ledger(None, s.entries())
    change = ledger.changes["src/app.py"]
    assert (change.status, change.added, change.removed, change.edits) == ("created", 5, 1, 2)
    assert change.last_edit == "m000005"  # the edit's result


def test_an_overwrite_is_diffed_against_the_content_the_session_showed() -> None:
    s = Session()
    s.call("read_file", {"path": "a.py"}, "     1\tx = 1\n     2\ty = 2")
    s.call("write_file", {"path": "a.py", "content": "x = 1\ny = 3\nz = 4\n"}, "Overwrote a.py (3 lines, 18 bytes).")
    change = build_ledger(None, s.entries()).changes["a.py"]
    assert (change.status, change.added, change.removed, change.removed_unknown) == ("modified", 2, 1, False)


def test_an_overwrite_of_unseen_content_says_the_removed_lines_are_unknown() -> None:
    s = Session().call("write_file", {"path": "b.py", "content": "1\n2\n"}, "Overwrote b.py (2 lines, 4 bytes).")
    change = build_ledger(None, s.entries()).changes["b.py"]
    assert change.added == 2 and change.removed_unknown
    assert "never showed" in render_ledger(build_ledger(None, s.entries()))


def test_replace_all_counts_every_occurrence() -> None:
    s = Session().call(
        "edit_file",
        {"path": "c.py", "old_string": "foo", "new_string": "bar\nbaz", "replace_all": True},
        "Edited c.py: replaced 3 occurrences (first at line 1).",
    )
    change = build_ledger(None, s.entries()).changes["c.py"]
    assert (change.added, change.removed) == (6, 3)


def test_failed_edits_change_nothing_but_are_errors() -> None:
    s = Session().call(
        "edit_file", {"path": "c.py", "old_string": "x", "new_string": "y"}, "Error: old_string was not found in c.py."
    )
    ledger = build_ledger(None, s.entries())
    assert not ledger.changes
    assert [(e.tool, e.text) for e in ledger.errors] == [("edit_file", "Error: old_string was not found in c.py.")]


def test_absolute_paths_inside_the_work_root_are_made_relative() -> None:
    s = Session().call("write_file", {"path": "/work/p/src/x.py", "content": "1\n"}, "Created src/x.py (1 lines, 2 bytes).")
    assert list(build_ledger(None, s.entries(), "/work/p").changes) == ["src/x.py"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("rm old.txt", [("old.txt", None)]),
        ("git rm -f a.py && rm -- b.py", [("a.py", None), ("b.py", None)]),
        ("mv a.py b.py", [("a.py", "b.py")]),
        ('rm "with space.txt"', [("with space.txt", None)]),
        ("rm *.pyc", []),
        ("rm $FILE", []),
        ("make clean || rm x", []),
        ("rm a > log", []),
        ("git rm --cached a.py", []),
        ("mv a b c/", []),
        ("echo rm a", []),
    ],
)
def test_deletions_are_read_only_from_plain_commands(command: str, expected: list[Any]) -> None:
    assert file_removals(command) == expected


def test_a_successful_rm_or_mv_marks_files_deleted_and_a_failed_one_does_not() -> None:
    s = Session()
    s.call("exec", {"command": "rm gone.txt && mv a.py b.py"}, exec_result("(no output)", 0))
    s.call("exec", {"command": "rm kept.txt"}, exec_result("rm: cannot remove 'kept.txt'", 1))
    changes = build_ledger(None, s.entries()).changes
    assert changes["gone.txt"].status == "deleted"
    assert (changes["a.py"].status, changes["a.py"].moved_to) == ("deleted", "b.py")
    assert changes["b.py"].status == "created"
    assert "kept.txt" not in changes


# --- commands and tests ----------------------------------------------------------------------------


def test_exec_outcomes_are_read_from_the_result_trailer() -> None:
    assert exec_outcome(exec_result("ok", 0), False).status == "ok"
    failed = exec_outcome(exec_result("boom", 2), False)
    assert (failed.status, failed.exit_code, failed.output) == ("failed", 2, "boom")
    assert exec_outcome("out\n\nTimed out after 60 s; the command and its children were killed.", False).status == "timeout"
    assert exec_outcome("out\n\nKilled by signal 9 (SIGKILL).", False).exit_code == -9
    assert exec_outcome("Error: Refused: blocked", True).status == "error"


def test_a_failing_command_keeps_a_short_tail_of_its_output() -> None:
    output = "\n".join(f"line {i}" for i in range(50)) + "\nValueError: the real reason"
    s = Session().call("exec", {"command": "python run.py"}, exec_result(output, 1))
    [run] = build_ledger(None, s.entries()).commands
    assert run.status == "failed" and run.exit_code == 1
    assert run.tail.endswith("ValueError: the real reason") and "line 0" not in run.tail
    assert len(run.tail.splitlines()) <= 8


def test_repeated_commands_are_counted_not_listed_again() -> None:
    s = Session()
    for _ in range(3):
        s.call("exec", {"command": "make build"}, exec_result("ok", 0))
    [run] = build_ledger(None, s.entries()).commands
    assert run.runs == 3 and run.id == "m000006"


@pytest.mark.parametrize(
    "command",
    ["pytest -q", "python -m pytest tests/", "npm test", "npm run test", "cargo test", "go test ./...", "make test",
     "uv run pytest", "cd web && yarn test"],
)  # fmt: skip
def test_test_commands_are_recognised(command: str) -> None:
    assert is_test_command(command)


@pytest.mark.parametrize("command", ["ls tests", "cat pytest.ini", "echo testing", "git status"])
def test_other_commands_are_not_tests(command: str) -> None:
    assert not is_test_command(command)


def test_the_last_result_of_each_test_command_is_kept_with_the_runners_verdict() -> None:
    s = Session()
    s.call("exec", {"command": "pytest -q"}, exec_result("F.\nFAILED t.py::x\n1 failed, 1 passed in 0.1s", 1))
    s.call("exec", {"command": "npm test"}, exec_result("Tests: 3 passed", 0))
    s.call("exec", {"command": "pytest -q"}, exec_result("..\n2 passed in 0.1s", 0))
    ledger = build_ledger(None, s.entries())
    assert [(t.command, t.status) for t in ledger.tests] == [("npm test", "ok"), ("pytest -q", "ok")]
    assert ledger.last_test is not None and ledger.last_test.summary == "2 passed in 0.1s"
    text = render_ledger(ledger)
    assert "Last test result: `pytest -q` → passed (exit 0) at m000006: 2 passed in 0.1s" in text


def test_the_runners_verdict_line_is_picked() -> None:
    assert runner_verdict("collected 3\n...\n=== 3 passed in 0.01s ===") == "3 passed in 0.01s"
    assert runner_verdict("test result: ok. 4 passed; 0 failed") == "test result: ok. 4 passed; 0 failed"
    assert runner_verdict("nothing here") == ""


# --- the other facts ---------------------------------------------------------------------------------


def test_reads_urls_searches_skills_and_mcp_tools_are_recorded() -> None:
    s = Session()
    s.call("read_file", {"path": "README.md"}, "     1\thello")
    s.call("web_fetch", {"url": "https://example.org/doc"}, "# Doc")
    s.call("web_search", {"query": "tiktoken o200k"}, "1. result")
    s.call("skill", {"name": "drawio"}, "skill body")
    s.call("mcp__git__status", {}, "clean")
    s.call("mcp__git__status", {}, "clean")
    ledger = build_ledger(None, s.entries())
    assert list(ledger.reads) == ["README.md"]
    assert list(ledger.urls) == ["https://example.org/doc"]
    assert list(ledger.searches) == ["tiktoken o200k"]
    assert list(ledger.skills) == ["drawio"]
    assert ledger.mcp_tools == {"mcp__git__status": 2}
    text = render_ledger(ledger)
    for needle in ("README.md", "https://example.org/doc", "tiktoken o200k", "drawio", "mcp__git__status ×2"):
        assert needle in text


def test_errors_met_are_listed_with_the_tool_and_message() -> None:
    s = Session().call("web_fetch", {"url": "http://10.0.0.1/"}, "Error: private address refused")
    assert "web_fetch (m000002): Error: private address refused" in render_ledger(build_ledger(None, s.entries()))


# --- malformed calls -----------------------------------------------------------------------------------


def test_malformed_calls_are_recorded_as_such_and_never_raise() -> None:
    s = Session()
    s.call("edit_file", "{not json", "Error: the arguments are not valid JSON")
    s.call("frobnicate", {}, "Error: there is no tool named 'frobnicate'. Available tools: read_file")
    s.call("exec", "[1, 2]", "Error: the arguments must be a JSON object.")
    s.messages.append({"role": "assistant", "content": None, "tool_calls": ["not a call", {"id": "x"}, None]})
    s.messages.append({"role": "assistant", "content": None, "tool_calls": "nonsense"})
    s.messages.append({"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
    s.call("write_file", {"path": 42, "content": None}, "Error: `content` is missing")
    ledger = build_ledger(None, s.entries())
    problems = [(m.tool, m.text) for m in ledger.malformed]
    assert ("edit_file", "arguments that are not valid JSON") in problems
    assert ("frobnicate", "unknown tool") in problems
    assert ("exec", "arguments that are not a JSON object") in problems
    assert ("(no name)", "a tool call that is not an object") in problems
    assert ("(no name)", "a tool call without a tool name") in problems
    assert not ledger.changes
    assert "Malformed tool calls" in render_ledger(ledger)


def test_a_call_without_a_result_is_an_error_not_a_crash() -> None:
    s = Session().call("exec", {"command": "sleep 100"}, None)
    ledger = build_ledger(None, s.entries())
    assert ledger.commands[0].status == "no result"
    assert "no result" in ledger.errors[0].text


# --- merging and bounds ----------------------------------------------------------------------------------


def test_a_ledger_merges_with_the_previous_one_through_its_stored_form() -> None:
    first = Session().call("write_file", {"path": "a.py", "content": "1\n"}, "Created a.py (1 lines, 2 bytes).")
    stored = json.loads(json.dumps(build_ledger(None, first.entries()).to_dict()))
    second = Session().call(
        "edit_file", {"path": "a.py", "old_string": "1", "new_string": "1\n2"}, "Edited a.py: replaced 1 occurrence"
    )
    second.call("exec", {"command": "pytest"}, exec_result("1 passed", 0))
    merged = build_ledger(stored, second.entries(start=40))
    change = merged.changes["a.py"]
    assert (change.status, change.added, change.edits, change.last_edit) == ("created", 2, 2, "m000041")
    assert merged.last_test is not None and merged.last_test.id == "m000043"


def test_a_stored_ledger_that_is_garbage_loads_as_empty() -> None:
    for garbage in (None, "text", [1, 2], {"changes": {"a": "b"}, "commands": ["x"], "reads": 5}):
        assert Ledger.from_dict(garbage).empty


def test_the_bound_drops_the_oldest_reads_first_and_never_a_changed_file() -> None:
    s = Session()
    for i in range(40):
        s.call("read_file", {"path": f"src/module_{i:02d}.py"}, "     1\tx")
    for i in range(15):
        s.call("write_file", {"path": f"out/file_{i:02d}.py", "content": "x\n"}, f"Created out/file_{i:02d}.py (1 lines, 2 bytes).")
    ledger = build_ledger(None, s.entries())
    assert COUNTER.count_text(render_ledger(ledger)) > 700
    bound_ledger(ledger, 700, COUNTER.count_text)
    assert len(ledger.changes) == 15  # every changed file is still there
    assert "src/module_39.py" in ledger.reads and "src/module_00.py" not in ledger.reads
    text = render_ledger(ledger)
    assert COUNTER.count_text(text) <= 700
    assert "older reads" in text


def test_changed_files_stay_even_when_they_alone_pass_the_bound() -> None:
    s = Session()
    for i in range(30):
        s.call("write_file", {"path": f"f{i}.py", "content": "x\n"}, f"Created f{i}.py (1 lines, 2 bytes).")
    ledger = bound_ledger(build_ledger(None, s.entries()), 50, COUNTER.count_text)
    assert len(ledger.changes) == 30


def test_an_empty_ledger_renders_nothing() -> None:
    assert render_ledger(build_ledger(None, Session().user("hello").entries())) == ""
