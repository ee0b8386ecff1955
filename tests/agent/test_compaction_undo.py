"""Undoing compactions (docs/architecture.md §5, §6) in the loop and from the shell, and seeing them:
`compact --undo`, `sessions show`, and `context --session --json` with the ledger as data."""

from __future__ import annotations

import json

import pytest
from compaction_helpers import Brain, chat_requests, seed, summary_text
from typer.testing import CliRunner

from catbuddy.agent.events import CompactionUndone
from catbuddy.cli import app
from catbuddy.config import ContextSettings
from catbuddy.session.history import rebuild_history
from catbuddy.session.records import CompactionUndoRecord, read_session_file
from catbuddy.session.store import SessionStore

NEVER = ContextSettings(compact_message_threshold=10**6, compact_token_ratio=100.0)


def working(loop) -> tuple[object, list[tuple[str, dict]]]:
    history = loop.conversation.history
    return history.summary, [(e.id, e.message) for e in history.entries]


async def test_undo_brings_back_the_history_before_the_compaction_and_the_next_request_shows_it(
    scripted_llm_factory, make_loop
):
    llm = scripted_llm_factory([Brain()] * 10)
    loop, events = await make_loop(llm, context=NEVER)
    seed(loop, 20)
    before = working(loop)
    assert (await loop.compact()).ok

    undone = await loop.undo_compaction()

    assert undone.ok and undone.voided_id == "c000001" and undone.summary_id == ""
    assert working(loop) == before
    assert events.of(CompactionUndone) == [undone]
    assert "back to 40 messages" in undone.message
    await loop.run_turn("and now?")
    request = chat_requests(llm)[-1]
    assert [m for m in request.messages[1:-1]] == [m for _, m in before[1]]  # no summary: the raw history


async def test_several_undos_walk_back_several_compactions(scripted_llm_factory, make_loop):
    llm = scripted_llm_factory([Brain()] * 10)
    loop, _ = await make_loop(llm, context=NEVER)
    seed(loop, 20, tag="a")
    first_state = working(loop)
    assert (await loop.compact()).ok
    seed(loop, 20, tag="b")
    second_state = working(loop)
    assert (await loop.compact()).ok

    assert (await loop.undo_compaction()).summary_id == "c000001"
    assert working(loop) == second_state
    assert (await loop.undo_compaction()).ok
    summary, entries = working(loop)
    assert summary is None and entries[: len(first_state[1])] == first_state[1]
    nothing = await loop.undo_compaction()
    assert not nothing.ok and "Nothing to undo" in nothing.message


async def test_compacting_after_an_undo_folds_again_and_merges_the_ledger_of_the_compaction_in_force(
    scripted_llm_factory, make_loop, workspace
):
    (workspace.work_root / "a.py").write_text("x = 1\n")
    llm = scripted_llm_factory([Brain()] * 10)
    loop, _ = await make_loop(llm, context=NEVER)
    loop.conversation.append({"role": "user", "content": "read a.py"})
    loop.conversation.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "r1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
            ],
        }
    )
    loop.conversation.append({"role": "tool", "tool_call_id": "r1", "content": "     1\tx = 1"})
    seed(loop, 20)
    assert (await loop.compact()).ok
    assert (await loop.undo_compaction()).ok
    assert (await loop.compact()).ok
    data = loop.conversation.history.compaction_data
    assert list(data["ledger"]["reads"]) == ["a.py"]
    assert loop.conversation.history.summary_id == "c000002"


async def test_context_reports_how_many_messages_are_folded_and_searchable(scripted_llm_factory, make_loop):
    from catbuddy.context.governance.report import format_table
    from catbuddy.tui.screens.context import context_table

    llm = scripted_llm_factory([Brain()] * 10)
    loop, _ = await make_loop(llm, context=NEVER)
    seed(loop, 20)
    assert loop.context_report().folded_messages == 0
    assert (await loop.compact()).ok

    report = loop.context_report()
    assert report.folded_messages == 14 == loop.conversation.history.folded
    assert "14 earlier messages are folded into the summary" in format_table(report)
    import io

    from rich.console import Console

    console = Console(width=120, record=True, file=io.StringIO())
    console.print(context_table(report))
    assert "folded: 14 earlier messages, out of view but searchable with recall" in console.export_text()
    await loop.undo_compaction()
    assert loop.context_report().folded_messages == 0


# --- from the shell ----------------------------------------------------------------------------------


@pytest.fixture
def shell(workspace):
    runner = CliRunner()

    def invoke(*args: str, llm=None):
        env = {"OPENAI_API_KEY": "test-key"}
        common = ["--cwd", str(workspace.work_root), "--model", "scripted"]
        if llm is not None:
            common += ["--base-url", llm.base_url]
        return runner.invoke(app, [*common, *args], env=env)

    return invoke


def compacted_session(workspace, llm, shell, turns: int = 20) -> str:
    store = SessionStore(workspace.sessions_dir)
    with store.create(workspace.work_root, "scripted") as session:
        for i in range(turns):
            session.append_message({"role": "user", "content": f"Always say please, rule {i}"})
            session.append_message({"role": "assistant", "content": f"answer {i}"})
        session_id = session.id
    result = shell("compact", llm=llm)
    assert result.exit_code == 0, result.output
    return session_id


def test_compact_undo_voids_the_latest_compaction_and_context_reflects_it(scripted_llm_factory, shell, workspace):
    llm = scripted_llm_factory([Brain()] * 5)
    session_id = compacted_session(workspace, llm, shell)
    before = json.loads(shell("context", "--json", "--no-mcp", "--session", session_id).stdout)
    assert before["compaction"]["id"] == "c000001" and before["compaction"]["folded_messages"] == 14

    result = shell("compact", "--undo")

    assert result.exit_code == 0, result.output
    assert f"session {session_id}: Undid compaction c000001" in result.output
    path = SessionStore(workspace.sessions_dir).path_for(session_id)
    records = read_session_file(path).records
    assert [r.voids for r in records if isinstance(r, CompactionUndoRecord)] == ["c000001"]
    after = json.loads(shell("context", "--json", "--no-mcp", "--session", session_id).stdout)
    assert after["summary"] is None and after["compaction"] is None
    assert len(after["messages"]) == 1 + 40
    assert rebuild_history(records).summary is None


def test_compact_undo_with_nothing_to_undo_exits_0(scripted_llm_factory, shell, workspace):
    llm = scripted_llm_factory([Brain()] * 5)
    session_id = compacted_session(workspace, llm, shell)
    assert shell("compact", "--undo", "--session", session_id).exit_code == 0

    result = shell("compact", "--undo", "--session", session_id)

    assert result.exit_code == 0  # nothing to do is not a failure
    assert "nothing to undo" in result.output


def test_compact_undo_without_any_session_exits_0(shell):
    result = shell("compact", "--undo")
    assert result.exit_code == 0 and "nothing to undo" in result.output


def test_compact_undo_takes_no_instructions(shell):
    result = shell("compact", "--undo", "keep", "this")
    assert result.exit_code == 2 and "--undo takes no instructions" in result.output


def test_context_json_shows_the_ledger_and_the_users_words_as_data(scripted_llm_factory, shell, workspace):
    llm = scripted_llm_factory([Brain()] * 5)
    session_id = compacted_session(workspace, llm, shell)

    data = json.loads(shell("context", "--json", "--no-mcp", "--session", session_id).stdout)

    compaction = data["compaction"]
    assert compaction["mode"] == "live_prefix" and compaction["prose"] == summary_text(1)
    assert isinstance(compaction["ledger"], dict) and "changes" in compaction["ledger"]
    assert [w["text"] for w in compaction["user_messages"]][:2] == ["Always say please, rule 0", "Always say please, rule 1"]
    assert all(w["rule"] for w in compaction["user_messages"])
    assert compaction["searchable_messages"] == 40


def test_sessions_show_prints_each_compactions_summary_and_ledger(scripted_llm_factory, shell, workspace):
    (workspace.work_root / "a.py").write_text("x\n")
    llm = scripted_llm_factory([Brain()] * 5)
    session_id = compacted_session(workspace, llm, shell)
    assert shell("compact", "--undo").exit_code == 0
    assert shell("compact", llm=llm).exit_code == 0

    text = shell("sessions", "show", session_id[:12])
    data = json.loads(shell("sessions", "show", session_id, "--json").stdout)

    assert text.exit_code == 0, text.output
    assert "compaction c000001" in text.output and "· undone" in text.output
    assert "compaction c000002" in text.output and "· in force" in text.output
    assert "## The user's own words" in text.output and "Always say please, rule 0" in text.output
    assert [c["in_force"] for c in data["compactions"]] == [False, True]
    assert data["compactions"][0]["undone_at"]
    assert data["working_history"]["summary_id"] == "c000002"
    assert isinstance(data["compactions"][1]["ledger"], dict)


def test_sessions_show_of_an_unknown_session_says_so(shell):
    result = shell("sessions", "show", "nope")
    assert result.exit_code == 2 and "no session 'nope'" in result.output


def test_sessions_still_lists_the_sessions(scripted_llm_factory, shell, workspace):
    llm = scripted_llm_factory([Brain()] * 5)
    session_id = compacted_session(workspace, llm, shell)
    listing = shell("sessions")
    assert listing.exit_code == 0 and session_id in listing.output
    assert session_id in shell("sessions", "--json").stdout
