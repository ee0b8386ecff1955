"""The tolerant JSONL reader: what loads, what is skipped, what is reported, what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catbuddy.session.records import (
    CompactionRecord,
    EventRecord,
    MessageRecord,
    SessionFileError,
    read_session_file,
)

META = {
    "type": "meta",
    "session_id": "20260101-000000-abcdef",
    "created_at": "2026-01-01T00:00:00.000+00:00",
    "work_root": "/tmp/project",
    "model": "gpt-4o",
    "catbuddy_version": "0.1.0",
}


def message(n: int, role: str = "user", content: object = "hello") -> dict[str, object]:
    return {
        "type": "message",
        "id": f"m{n:06d}",
        "ts": "2026-01-01T00:00:01.000+00:00",
        "role": role,
        "content": content,
    }


def write_lines(path: Path, lines: list[str], final_newline: bool = True) -> Path:
    path.write_text("\n".join(lines) + ("\n" if final_newline else ""), encoding="utf-8")
    return path


def test_a_well_formed_file_loads_meta_and_records_in_order(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            json.dumps(META),
            json.dumps(message(1)),
            json.dumps({"type": "event", "ts": None, "kind": "usage", "prompt_tokens": 12}),
            json.dumps(
                {
                    "type": "compaction",
                    "id": "c000001",
                    "ts": None,
                    "summary": "S",
                    "folded_through": "m000001",
                    "tokens_before": 9,
                }
            ),
        ],
    )
    result = read_session_file(path)
    assert result.meta is not None and result.meta.session_id == META["session_id"]
    assert [type(r) for r in result.records] == [MessageRecord, EventRecord, CompactionRecord]
    assert result.records[1] == EventRecord(ts=None, kind="usage", data={"prompt_tokens": 12})
    assert result.records[2].extra == {"tokens_before": 9}  # type: ignore[union-attr]
    assert result.problems == [] and result.corrupt_lines == [] and not result.truncated_tail


def test_a_truncated_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    torn = json.dumps(message(2))[:25]
    path = write_lines(
        tmp_path / "s.jsonl", [json.dumps(META), json.dumps(message(1)), torn], final_newline=False
    )
    result = read_session_file(path)
    assert [m.id for m in result.messages] == ["m000001"]
    assert result.truncated_tail
    assert result.corrupt_lines == [3]
    assert any("line 3: truncated last line" in p for p in result.problems)


def test_a_corrupt_line_in_the_middle_is_skipped_and_counted(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            json.dumps(META),
            json.dumps(message(1)),
            '{"type": "message", "id": "m0000',
            json.dumps(message(3)),
        ],
    )
    result = read_session_file(path)
    assert [m.id for m in result.messages] == ["m000001", "m000003"]
    assert result.corrupt_lines == [3]
    assert not result.truncated_tail
    assert "1 unreadable line skipped" in result.problems[0]
    assert any(p.startswith("line 3: not valid JSON") for p in result.problems)


def test_two_objects_glued_on_one_line_are_corrupt_not_half_read(tmp_path: Path) -> None:
    glued = json.dumps(message(2)) + json.dumps(message(3))
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(META), json.dumps(message(1)), glued])
    result = read_session_file(path)
    assert [m.id for m in result.messages] == ["m000001"]
    assert result.corrupt_lines == [3]
    assert any("extra data" in p for p in result.problems)


def test_a_record_missing_a_required_field_is_skipped_like_a_corrupt_line(tmp_path: Path) -> None:
    no_role = {"type": "message", "id": "m000002", "ts": None, "content": "who said this?"}
    no_kind = {"type": "event", "ts": None, "detail": "x"}
    path = write_lines(
        tmp_path / "s.jsonl",
        [json.dumps(META), json.dumps(message(1)), json.dumps(no_role), json.dumps(no_kind)],
    )
    result = read_session_file(path)
    assert [m.id for m in result.messages] == ["m000001"]
    assert result.corrupt_lines == [3, 4]
    assert any("message m000002 has no role" in p for p in result.problems)
    assert any("event record without a kind" in p for p in result.problems)


def test_unknown_record_types_are_skipped_and_counted_but_are_not_corruption(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [json.dumps(META), json.dumps({"type": "bookmark", "at": "m000001"}), json.dumps(message(1))],
    )
    result = read_session_file(path)
    assert result.unknown_records == 1
    assert result.corrupt_lines == [] and result.problems == []
    assert len(result.messages) == 1


def test_a_file_of_plain_openai_message_lines_without_meta_loads(tmp_path: Path) -> None:
    lines = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "a.py"},
    ]
    path = write_lines(tmp_path / "history.jsonl", [json.dumps(line) for line in lines])
    result = read_session_file(path)
    assert result.meta is None
    assert [m.message for m in result.messages] == lines
    assert len({m.id for m in result.messages}) == 4  # ids are made up per line, still unique
    assert result.problems == []


def test_a_leading_utf8_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"role": "user", "content": "hi"}).encode() + b"\r\n")
    result = read_session_file(path)
    assert [m.message for m in result.messages] == [{"role": "user", "content": "hi"}]
    assert result.problems == []


def test_a_json_array_is_refused_with_an_error_naming_the_file_and_the_expected_format(
    tmp_path: Path,
) -> None:
    path = tmp_path / "history.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}], indent=2), encoding="utf-8")
    with pytest.raises(SessionFileError) as caught:
        read_session_file(path)
    text = str(caught.value)
    assert str(path) in text
    assert "one JSON object per line" in text
    assert "JSON array" in text


def test_a_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\xff\xfe\n\x00\x01")
    with pytest.raises(SessionFileError, match="image.png is not a session file"):
        read_session_file(path)


def test_a_file_with_some_valid_lines_among_garbage_loads_instead_of_failing(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", ["garbage", "[1, 2]", json.dumps(message(1)), "\x00\x01"])
    result = read_session_file(path)
    assert len(result.messages) == 1
    assert result.corrupt_lines == [1, 2, 4]


def test_an_empty_file_loads_as_an_empty_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    result = read_session_file(path)
    assert result.meta is None and result.records == [] and result.problems == []


def test_a_missing_file_gives_a_session_file_error(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError, match="no such session file"):
        read_session_file(tmp_path / "nope.jsonl")


def test_a_line_separator_inside_content_does_not_split_a_record(tmp_path: Path) -> None:
    text = "para\u2028graph\x85end\r"
    path = tmp_path / "s.jsonl"
    path.write_bytes((json.dumps(message(1, content=text), ensure_ascii=False) + "\n").encode("utf-8"))
    result = read_session_file(path)
    assert result.messages[0].message["content"] == text


def test_very_many_corrupt_lines_are_summarised_not_listed_one_by_one(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [json.dumps(META)] + ["{broken"] * 50)
    result = read_session_file(path)
    assert len(result.corrupt_lines) == 50
    assert len(result.problems) <= 12
    assert any("more problems" in p for p in result.problems)


def test_reading_five_thousand_records_keeps_them_all(tmp_path: Path) -> None:
    lines = [json.dumps(META)]
    for n in range(1, 5001):
        content = f"message {n} " + "lorem ipsum dolor sit amet " * 10
        lines.append(json.dumps(message(n, role="user" if n % 2 else "assistant", content=content)))
    path = write_lines(tmp_path / "big.jsonl", lines)
    result = read_session_file(path)
    assert len(result.messages) == 5000
    assert result.messages[-1].message["content"].startswith("message 5000 ")
