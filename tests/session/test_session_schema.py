"""Every record is checked against the JSONL schema on load: a wrong shape is skipped and reported like a
corrupt line, never sent; hostile sizes and nesting are bounded before parsing; bad text is repaired."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catbuddy.session import records
from catbuddy.session.records import MAX_DEPTH, message_problem, read_session_file

META = {
    "type": "meta",
    "session_id": "20260101-000000-abcdef",
    "created_at": "2026-01-01T00:00:00.000+00:00",
    "work_root": "/tmp/project",
    "model": "gpt-4o",
    "catbuddy_version": "0.1.0",
}
CALL = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


def record(n: int, **message: Any) -> str:
    return json.dumps({"type": "message", "id": f"m{n:06d}", "ts": None, **message})


def load(tmp_path: Path, *lines: str) -> records.LoadResult:
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([json.dumps(META), *lines]) + "\n", encoding="utf-8")
    return read_session_file(path)


WRONG_SHAPES: list[tuple[dict[str, Any], str]] = [
    ({"role": "assistant", "content": None, "tool_calls": "read_file"}, "tool_calls is str, not a list"),
    ({"role": "user", "content": 42}, "content is int, not a string, null or a list of parts"),
    ({"role": "wizard", "content": "hi"}, "role 'wizard' is not one of system, user, assistant, tool"),
    ({"role": 7, "content": "hi"}, "role 7 is not one of"),
    (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"type": "function", "function": CALL["function"]}],
        },
        "tool_calls[0] has no string id",
    ),
    (
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
        "function is null",
    ),
    (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{**CALL, "function": {"name": "x", "arguments": {}}}],
        },
        "arguments is dict, not a string",
    ),
    (
        {"role": "assistant", "content": None, "tool_calls": [{**CALL, "function": {"arguments": "{}"}}]},
        "function has no string name",
    ),
    ({"role": "assistant", "content": None, "tool_calls": [{**CALL, "type": "code"}]}, "not 'function'"),
    ({"role": "assistant", "content": None, "tool_calls": [CALL, CALL]}, "two tool calls share one id"),
    ({"role": "assistant", "content": None, "tool_calls": ["c1"]}, "tool_calls[0] is str, not an object"),
    ({"role": "user", "content": "x", "tool_calls": [CALL]}, "a user message may not carry tool_calls"),
    ({"role": "assistant", "content": None}, "neither content nor tool calls"),
    ({"role": "user", "content": None}, "a user message needs content"),
    ({"role": "user", "content": []}, "a user message needs content"),
    ({"role": "assistant", "content": [], "tool_calls": []}, "neither content nor tool calls"),
    ({"role": "tool", "content": "result"}, "a tool message without a string tool_call_id"),
    (
        {"role": "tool", "content": "result", "tool_call_id": 3},
        "a tool message without a string tool_call_id",
    ),
    ({"role": "user", "content": "x", "tool_call_id": "c1"}, "a user message may not carry a tool_call_id"),
    ({"role": "user", "content": [{"text": "no type"}]}, "content[0] is not a content part"),
    (
        {"role": "user", "content": [{"type": "text", "text": 5}]},
        "content[0] is a text part without a string",
    ),
    ({"role": "user", "content": ["plain"]}, "content[0] is not a content part"),
    ({"role": "user", "content": "x", "name": ["me"]}, "name is list, not a string"),
]


@pytest.mark.parametrize(("message", "reason"), WRONG_SHAPES)
def test_a_record_of_the_wrong_shape_is_skipped_counted_and_reported(
    message: dict[str, Any], reason: str, tmp_path: Path
) -> None:
    result = load(
        tmp_path,
        record(1, role="user", content="before"),
        record(2, **message),
        record(3, role="user", content="after"),
    )
    assert [m.id for m in result.messages] == ["m000001", "m000003"]
    assert result.corrupt_lines == [3]
    assert any(p.startswith("line 3: message m000002: ") and reason in p for p in result.problems), (
        result.problems
    )
    assert "1 unreadable line skipped" in result.problems[0]


def test_valid_shapes_of_every_role_load_unchanged(tmp_path: Path) -> None:
    good = [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}],
        },
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "done", "name": "catbuddy", "reasoning_content": "kept as is"},
    ]
    result = load(tmp_path, *(record(i + 1, **m) for i, m in enumerate(good)))
    assert [m.message for m in result.messages] == good
    assert result.problems == [] and all(message_problem(m) == "" for m in good)


def test_a_line_nested_100000_levels_deep_is_skipped_without_a_recursion_error(tmp_path: Path) -> None:
    deep = (
        '{"type": "message", "id": "m000002", "role": "user", "content": '
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    )
    result = load(tmp_path, record(1, role="user", content="kept"), deep, "[" * 100_000)
    assert [m.id for m in result.messages] == ["m000001"]
    assert result.corrupt_lines == [3, 4]
    assert any(f"nested more than {MAX_DEPTH} levels deep" in p for p in result.problems)


def test_nesting_just_past_the_bound_is_refused_before_anything_walks_it(tmp_path: Path) -> None:
    inner: Any = "x"
    for _ in range(MAX_DEPTH + 1):
        inner = {"k": inner}
    line = record(1, role="user", content="x", extra=inner)
    result = load(tmp_path, line)
    assert result.messages == [] and any("levels deep" in p for p in result.problems)


def test_an_overlong_line_is_skipped_before_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "MAX_LINE_BYTES", 1000)
    result = load(
        tmp_path, record(1, role="user", content="x" * 2000), record(2, role="user", content="short")
    )
    assert [m.id for m in result.messages] == ["m000002"]
    assert any("over the 1,000-byte limit" in p for p in result.problems)


def test_bytes_that_are_not_utf8_are_replaced_visibly_and_the_record_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = record(1, role="user", content="caf_").encode().replace(b"caf_", b"caf\xe9")
    path.write_bytes(json.dumps(META).encode() + b"\n" + line + b"\n")
    result = read_session_file(path)
    assert result.messages[0].message["content"] == "caf\ufffd"
    assert any("line 2: bytes that are not UTF-8 replaced by U+FFFD" in p for p in result.problems)


def test_escaped_lone_surrogates_are_replaced_and_real_pairs_kept(tmp_path: Path) -> None:
    lone = record(1, role="user", content="x").replace('"x"', '"bad \\udcff end"')
    pair = record(2, role="user", content="x").replace('"x"', '"cat \\ud83d\\ude3a"')
    result = load(tmp_path, lone, pair)
    assert result.messages[0].message["content"] == "bad \ufffd end"
    assert result.messages[1].message["content"] == "cat \U0001f63a"
    assert [p for p in result.problems if "surrogates" in p] == ["line 2: lone surrogates replaced by U+FFFD"]
    for message in result.messages:
        json.dumps(message.message, ensure_ascii=False).encode("utf-8")


def test_wrong_shapes_in_a_plain_openai_history_file_are_skipped_too(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": "hi"})
        + "\n"
        + json.dumps({"role": "assistant", "tool_calls": "x"})
        + "\n"
    )
    result = read_session_file(path)
    assert len(result.messages) == 1 and result.corrupt_lines == [2]
