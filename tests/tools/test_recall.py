"""`recall`: searching the raw messages of a session file — folded ones included — by words or regex,
ranked, within a token cap, across the project's sessions on request (docs/architecture.md §5)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from catbuddy.config import ContextSettings
from catbuddy.session.store import Session, SessionStore
from catbuddy.tools.base import ToolContext
from catbuddy.tools.recall import RecallTool
from catbuddy.tools.registry import run_tool


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def call(session: Session, call_id: str, name: str, args: dict[str, Any], result: str) -> None:
    session.append_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            ],
        }
    )
    session.append_message({"role": "tool", "tool_call_id": call_id, "content": result})


def ctx_for(ctx: ToolContext, store: SessionStore, session: Session, **context: Any) -> ToolContext:
    settings = replace(ctx.settings, context=ContextSettings(**context)) if context else ctx.settings
    return replace(ctx, settings=settings, sessions_dir=store.sessions_dir, session_id=session.id)


async def recall(ctx: ToolContext, **args: Any) -> Any:
    return await run_tool(RecallTool(), args, ctx)


def test_recall_results_are_microcompactable() -> None:
    assert RecallTool.microcompactable


async def test_finds_a_word_in_a_folded_tool_result_with_its_id_role_and_position(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "read the notes\n\n[runtime: time=t, channel=tui]"})
        call(session, "c1", "read_file", {"path": "notes.txt"}, "     1\tthe release code is WOMBAT-42")
        session.append_message({"role": "assistant", "content": "read it"})
        session.append_compaction("summary", "m000004")
        session.append_message({"role": "user", "content": "go on"})
        result = await recall(ctx_for(ctx, store, session), query="wombat-42")
    assert not result.is_error
    assert "recall: 1 message match wombat-42 among 5 messages of this session." in result.content
    assert "[1] m000003 · tool result (read_file) · message 3 of 5 · folded (not in your context)" in result.content
    assert "the release code is WOMBAT-42" in result.content


async def test_words_rank_messages_holding_more_of_them_first(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "the parser is slow"})
        session.append_message({"role": "assistant", "content": "the tokenizer cache misses in the parser"})
        session.append_message({"role": "user", "content": "what about the cache?"})
        result = await recall(ctx_for(ctx, store, session), query="parser cache")
    hits = re.findall(r"\[\d\] (m\d+)", result.content)
    assert hits[0] == "m000002" and set(hits) == {"m000001", "m000002", "m000003"}


async def test_a_quoted_phrase_stays_together_and_case_does_not_matter(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "Use the Connection Pool here"})
        session.append_message({"role": "assistant", "content": "pool of connections, noted"})
        result = await recall(ctx_for(ctx, store, session), query='"connection pool"')
    assert re.findall(r"\[\d\] (m\d+)", result.content) == ["m000001"]


async def test_words_that_are_also_record_keys_only_match_message_text(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "hello"})
        session.append_message({"role": "assistant", "content": "the user asked about the content type"})
        result = await recall(ctx_for(ctx, store, session), query="content")
    assert re.findall(r"\[\d\] (m\d+)", result.content) == ["m000002"]


async def test_a_regex_matches_the_decoded_text_across_escaped_newlines_and_quotes(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": 'def main():\n    print("hi")'})
        session.append_message({"role": "user", "content": "def other(): pass"})
        session.append_message({"role": "user", "content": "start\nanchored line\nend"})
        c = ctx_for(ctx, store, session)
        spanning = await recall(c, query=r'main\(\):\n\s+print\("hi"\)', regex=True)
        anchored = await recall(c, query=r"(?m)^anchored", regex=True)
    assert re.findall(r"\[\d\] (m\d+)", spanning.content) == ["m000001"]
    assert re.findall(r"\[\d\] (m\d+)", anchored.content) == ["m000003"]


async def test_a_regex_without_a_plain_literal_is_matched_with_json_escapes_undone(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": 'code 123\n456 and a "quote"'})
        session.append_message({"role": "user", "content": "code 123 456 on one line"})
        session.append_message({"role": "user", "content": "A Heron flew by"})
        c = ctx_for(ctx, store, session)
        across = await recall(c, query=r"\d{3}\n\d{3}", regex=True)
        either = await recall(c, query=r"(?i)heron|egret", regex=True)
        quoted = await recall(c, query=r'"\w+"', regex=True)
        anchored = await recall(c, query=r"^\w+ \d+\n", regex=True)
    assert re.findall(r"\[\d\] (m\d+)", across.content) == ["m000001"]
    assert re.findall(r"\[\d\] (m\d+)", either.content) == ["m000003"]
    assert re.findall(r"\[\d\] (m\d+)", quoted.content) == ["m000001"]
    assert re.findall(r"\[\d\] (m\d+)", anchored.content) == ["m000001"]


def test_the_literal_a_regex_needs_is_what_the_bytes_are_searched_for() -> None:
    from catbuddy.session.search import prefilter_pattern, required_literal

    assert required_literal(re.compile(r"release code is \w+")) == b"release code is "
    assert required_literal(re.compile(r"foo|barbaz")) is None  # either side may match
    assert required_literal(re.compile(r'say "hello"')) == b"hello"  # JSON escapes the quotes
    assert prefilter_pattern(re.compile(r"(?m)^a[^b]$")).pattern == "(?m)a[^b]"
    assert prefilter_pattern(re.compile(r"(?!^)a")) is None


async def test_a_regex_that_does_not_compile_is_an_error_naming_the_problem(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "x"})
        result = await recall(ctx_for(ctx, store, session), query="(unclosed", regex=True)
    assert result.is_error
    assert "does not compile" in result.content and "missing )" in result.content


async def test_bad_arguments_are_errors(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "x"})
        c = ctx_for(ctx, store, session)
        assert "no word" in (await recall(c, query="a !")).content
        assert "scope" in (await recall(c, query="xx", scope="everything")).content
        assert "max_results" in (await recall(c, query="xx", max_results=0)).content
    assert "works inside a catbuddy session" in (await recall(ctx, query="xx")).content


async def test_nothing_found_says_so(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "hello"})
        result = await recall(ctx_for(ctx, store, session), query="giraffe")
    assert not result.is_error and "nothing matches giraffe among 1 messages" in result.content


async def test_role_filters_and_recalls_own_calls_and_results_are_not_searched(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "remember the word penguin"})
        session.append_message({"role": "assistant", "content": "penguin noted"})
        call(session, "r1", "recall", {"query": "penguin"}, "recall: 2 messages match penguin … penguin")
        c = ctx_for(ctx, store, session)
        everything = await recall(c, query="penguin")
        users = await recall(c, query="penguin", role="user")
    assert set(re.findall(r"\[\d\] (m\d+)", everything.content)) == {"m000001", "m000002"}
    assert re.findall(r"\[\d\] (m\d+)", users.content) == ["m000001"]


async def test_tool_call_arguments_are_searched_too(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        call(session, "c1", "exec", {"command": "pytest tests/test_flux_capacitor.py"}, "1 passed")
        result = await recall(ctx_for(ctx, store, session), query="flux_capacitor")
    assert "m000001 · assistant" in result.content and "exec" in result.content


async def test_results_stay_within_the_token_cap(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        for i in range(20):
            session.append_message({"role": "user", "content": f"otter {i} " + "filler words " * 100})
        result = await recall(ctx_for(ctx, store, session, recall_max_tokens=300), query="otter", max_results=20)
    from catbuddy.context.counting.tokens import counter_for

    assert counter_for("o200k_base").count_text(result.content) <= 300 + 40
    assert "more not shown" in result.content


async def test_project_scope_searches_the_other_sessions_too(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as other:
        other.append_message({"role": "user", "content": "the staging password rotation plan"})
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "hello"})
        c = ctx_for(ctx, store, session)
        here = await recall(c, query="rotation")
        everywhere = await recall(c, query="rotation", scope="project")
    assert "nothing matches" in here.content
    assert f"session {other.id}" in everywhere.content and "2 sessions of this project" in everywhere.content


async def test_a_torn_last_line_and_corrupt_lines_do_not_stop_the_search(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "first kiwi"})
        path = session.path
        with path.open("ab") as handle:
            handle.write(b'{"type":"message","id":"m000002","role":"user","content":"broken kiwi\n')
            handle.write(b'{"type":"message","id":"m000003","ts":null,"role":"user","content":"torn kiwi')
        result = await recall(ctx_for(ctx, store, session), query="kiwi")
    assert re.findall(r"\[\d\] (m\d+)", result.content) == ["m000001"]


async def test_a_non_ascii_word_matches_whatever_its_case(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "Ärger mit dem Über-Parser"})
        result = await recall(ctx_for(ctx, store, session), query="über-parser")
    assert "m000001" in result.content


async def test_an_undone_compaction_does_not_mark_messages_folded(ctx, store) -> None:
    with store.create(ctx.work_root, "m") as session:
        session.append_message({"role": "user", "content": "the heron"})
        session.append_message({"role": "assistant", "content": "ok"})
        compaction_id = session.append_compaction("s", "m000002")
        session.append_compaction_undo(compaction_id)
        result = await recall(ctx_for(ctx, store, session), query="heron")
    assert "m000001" in result.content and "folded" not in result.content
