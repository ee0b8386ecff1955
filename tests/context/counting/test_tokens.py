"""Token counting: exact tiktoken counts offline, Cookbook arithmetic, never under-counting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catbuddy.context.counting import encodings, tokens
from catbuddy.context.counting.encodings import load_encoding
from catbuddy.context.counting.tokens import TokenCounter, counter_for
from catbuddy.model_encodings import encoding_name_for_model

# The Cookbook's worked examples, as shipped in shared/testdata (a copy lives beside this test).
_SHARED = Path(__file__).resolve().parents[4] / "shared" / "testdata" / "cookbook_token_counts.json"
_LOCAL = Path(__file__).resolve().parent / "cookbook_token_counts.json"
COOKBOOK = json.loads((_SHARED if _SHARED.exists() else _LOCAL).read_text())


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_cookbook_chat_example_counts_exactly(encoding: str) -> None:
    example = COOKBOOK["chat_example"]
    assert counter_for(encoding).count_messages(example["messages"]) == example["expected"][encoding]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_cookbook_tools_example_counts_exactly(encoding: str) -> None:
    example = COOKBOOK["tools_example"]
    counted = counter_for(encoding).count_request(example["messages"], example["tools"])
    assert counted == example["expected"][encoding]


def test_gpt4o_chat_example_is_124_and_tools_example_is_101() -> None:
    counter = counter_for(encoding_name_for_model("gpt-4o"))
    assert counter.count_messages(COOKBOOK["chat_example"]["messages"]) == 124
    tools_example = COOKBOOK["tools_example"]
    assert counter.count_request(tools_example["messages"], tools_example["tools"]) == 101


def test_encoding_is_the_real_tiktoken_encoding_built_offline() -> None:
    encoding = load_encoding("o200k_base")
    assert encoding.name == "o200k_base"
    assert encoding.n_vocab == 200019
    assert encoding.decode(encoding.encode("hello world")) == "hello world"
    assert len(encoding.encode("你好世界")) >= 2


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1", "o200k_base"),
        ("gpt-5-mini", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("deepseek-chat", "o200k_base"),
        ("qwen2.5-coder:7b", "o200k_base"),
    ],
)
def test_model_maps_to_encoding(model: str, expected: str) -> None:
    assert encoding_name_for_model(model) == expected


def test_unknown_model_uses_configured_default() -> None:
    assert encoding_name_for_model("my-local-llama", default="cl100k_base") == "cl100k_base"


def test_message_count_covers_role_content_name_and_overhead() -> None:
    counter = counter_for("o200k_base")
    plain = counter.count_message({"role": "user", "content": "hello there"})
    named = counter.count_message({"role": "user", "content": "hello there", "name": "bob"})
    assert plain == 3 + counter.count_text("user") + counter.count_text("hello there")
    assert named == plain + counter.count_text("bob") + 1


def test_tool_calls_are_counted_with_name_and_arguments() -> None:
    counter = counter_for("o200k_base")
    arguments = json.dumps({"path": "src/app.py", "offset": 10})
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": arguments}}
        ],
    }
    counted = counter.count_message(message)
    assert counted >= 4 + counter.count_text("read_file") + counter.count_text(arguments)


def test_request_adds_reply_priming_once() -> None:
    counter = counter_for("o200k_base")
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert counter.count_messages(messages) == sum(counter.count_message(m) for m in messages) + 3


def test_nested_tool_schema_costs_more_than_the_cookbook_formula_alone() -> None:
    counter = counter_for("o200k_base")
    flat = {
        "type": "function",
        "function": {
            "name": "f",
            "description": "d",
            "parameters": {"type": "object", "properties": {"items": {"type": "array", "description": "x"}}},
        },
    }
    nested = json.loads(json.dumps(flat))
    nested["function"]["parameters"]["properties"]["items"]["items"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
    }
    assert counter.count_tools([nested]) > counter.count_tools([flat])


def test_counts_are_cached_per_message() -> None:
    counter = TokenCounter("o200k_base")
    calls = 0
    original = counter._count_message_uncached

    def counting(message: dict) -> int:
        nonlocal calls
        calls += 1
        return original(message)

    counter._count_message_uncached = counting  # type: ignore[method-assign]
    history = [{"role": "user", "content": f"message {i}"} for i in range(20)]
    counter.count_messages(history)
    counter.count_messages(history + [{"role": "assistant", "content": "new"}])
    assert calls == 21


def test_fallback_estimates_when_tiktoken_cannot_start(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    def broken(name: str) -> None:
        raise encodings.TokenizerUnavailable("no data")

    monkeypatch.setattr(tokens, "load_encoding", broken)
    counter = TokenCounter("o200k_base")
    assert not counter.exact
    assert counter.count_text("x" * 10) == 4  # ceil(10 / 3)
    assert "estimating tokens" in caplog.text


def _serialised_floor(counter: TokenCounter, message: dict) -> int:
    """A lower bound on what the API sees: every string field encoded on its own, plus the 3-token frame."""
    total = 3
    for key in ("role", "content", "name", "tool_call_id"):
        if isinstance(message.get(key), str):
            total += counter.count_text(message[key])
    for call in message.get("tool_calls") or []:
        total += counter.count_text(call["function"]["name"]) + counter.count_text(
            call["function"]["arguments"]
        )
    return total


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200)
messages = st.lists(
    st.one_of(
        st.builds(lambda c: {"role": "user", "content": c}, text),
        st.builds(
            lambda c, n: {"role": "system", "content": c, "name": n or "x"},
            text,
            st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
        ),
        st.builds(
            lambda a: {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "exec", "arguments": json.dumps({"command": a})},
                    }
                ],
            },
            text,
        ),
        st.builds(lambda c: {"role": "tool", "tool_call_id": "call_1", "content": c}, text),
    ),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(messages)
def test_no_request_is_under_counted(history: list[dict]) -> None:
    counter = counter_for("o200k_base")
    floor = sum(_serialised_floor(counter, m) for m in history) + (3 if history else 0)
    assert counter.count_messages(history) >= floor
    # and the whole serialised request never has more content tokens than we count, beyond JSON syntax
    joined = "".join(str(m.get("content") or "") for m in history)
    assert counter.count_messages(history) >= counter.count_text(joined) - len(history)


def test_parsed_ranks_are_cached_and_equal_the_verified_original(isolated_home: Path) -> None:
    ranks = encodings.load_ranks("cl100k_base")
    cache_file = encodings._ranks_cache_path("cl100k_base")
    assert cache_file is not None and cache_file.is_file()
    assert cache_file.is_relative_to(isolated_home)
    assert encodings.load_ranks("cl100k_base") == ranks == encodings._parse_ranks("cl100k_base")


def test_a_damaged_rank_cache_is_rebuilt(isolated_home: Path) -> None:
    encodings.load_ranks("cl100k_base")
    cache_file = encodings._ranks_cache_path("cl100k_base")
    assert cache_file is not None
    cache_file.write_bytes(b"garbage")
    ranks = encodings.load_ranks("cl100k_base")
    assert len(ranks) > 100_000
    assert cache_file.stat().st_size > 1_000_000
