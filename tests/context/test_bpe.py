"""tiktoken's algorithm in Python gives tiktoken's tokens, and the counter uses it for a process's first
counts before handing over to the Rust encoder (docs/architecture.md §3, "The first request")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import catbuddy
from catbuddy.context import tokens
from catbuddy.context.bpe import PieceTooLong, PythonBpe
from catbuddy.context.encodings import ENCODING_SOURCES, TokenizerUnavailable, load_encoding, load_python_encoding
from catbuddy.context.tokens import QUICK_BUDGET_CHARS, TokenCounter

ENCODINGS = sorted(ENCODING_SOURCES)
SAMPLES = [
    "",
    "hello world",
    "Hello, World! It's 2026; we're here — they'll see.",
    "def add(a, b):\n    return a + b\n\n\n\tindented\r\n  trailing   \n",
    "数えるのは正確に: 中文分词, 한국어 문장, ελληνικά, русский текст, עברית, العربية",
    "emoji 🐈‍⬛🐱👩🏽‍💻 flags 🇫🇷🇯🇵 and combining e\u0301 a\u0308",
    "numbers 1234567890 3.14159 1e-9 0xDEADBEEF",
    "    \n\n\n      \t\t \u00a0\u2003 spaces of every kind",
    "a lone surrogate \ud800 and another \udfff here",
    "CAPITALS and MixedCase and camelCaseIdentifiers_with_snake",
    "!!!???...,,,;;;:::''' \"\"\" ``` <<< >>> ///",
    "x" * 300,  # one long piece
]


def _repo_texts() -> list[str]:
    root = Path(catbuddy.__file__).parent
    return [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))[:60]]


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_python_encoder_gives_tiktokens_tokens_for_code_prose_and_every_script(name: str) -> None:
    rust = load_encoding(name)
    python = load_python_encoding(name)

    for text in SAMPLES + _repo_texts():
        assert python.encode_ordinary(text) == rust.encode_ordinary(text), text[:60]


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(codec=None), max_size=80))
def test_the_python_encoder_agrees_with_tiktoken_on_any_text(name: str, text: str) -> None:
    assert load_python_encoding(name).encode_ordinary(text) == load_encoding(name).encode_ordinary(text)


def test_a_bounded_encoder_refuses_a_piece_longer_than_its_bound() -> None:
    source = ENCODING_SOURCES["o200k_base"]
    bounded = PythonBpe(load_python_encoding("o200k_base").ranks, source.pattern, max_piece_bytes=16)

    assert bounded.encode_ordinary("short words only") == load_encoding("o200k_base").encode_ordinary(
        "short words only"
    )
    with pytest.raises(PieceTooLong):
        bounded.encode_ordinary("a" + "qzx" * 10)


class _Spy:
    """Records whether tiktoken's Rust encoder was built."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built = 0
        monkeypatch.setattr(tokens, "load_encoding", self._load)

    def _load(self, name: str) -> Any:
        self.built += 1
        return load_encoding(name)


def test_a_first_short_count_does_not_build_the_rust_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy(monkeypatch)
    counter = TokenCounter("o200k_base")

    count = counter.count_text("Count me exactly, please: 数える 🐈")

    assert count == len(load_encoding("o200k_base").encode_ordinary("Count me exactly, please: 数える 🐈"))
    assert spy.built == 0
    assert counter.loaded and counter.exact


def test_past_the_budget_the_rust_encoder_counts_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy(monkeypatch)
    counter = TokenCounter("cl100k_base")
    text = "Some ordinary prose, repeated until the Python budget is spent. " * 200
    rust = load_encoding("cl100k_base")

    counts = [counter.count_text(f"{i} {text}") for i in range(QUICK_BUDGET_CHARS // len(text) + 2)]

    assert spy.built == 1
    assert counts == [len(rust.encode_ordinary(f"{i} {text}")) for i in range(len(counts))]


def test_a_piece_too_long_for_python_is_counted_by_the_rust_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    spy = _Spy(monkeypatch)
    counter = TokenCounter("o200k_base")
    blob = "QUJD" * 2_000  # base64 without a break: one 8,000-byte piece

    assert counter.count_text(blob) == len(load_encoding("o200k_base").encode_ordinary(blob))
    assert spy.built == 1


def test_without_tiktokens_encoder_the_python_one_still_counts_exactly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(name: str) -> None:
        raise TokenizerUnavailable("no Rust encoder here")

    monkeypatch.setattr(tokens, "load_encoding", broken)
    counter = TokenCounter("o200k_base")
    blob = "QUJD" * 200 + " and prose"

    assert counter.count_text("warm up") == 2
    assert counter.count_text(blob) == len(load_encoding("o200k_base").encode_ordinary(blob))
    assert counter.exact
    assert "counting with its algorithm in Python" in caplog.text


def test_with_neither_encoder_counts_are_estimates_and_say_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(name: str, *args: Any) -> None:
        raise TokenizerUnavailable("no data")

    monkeypatch.setattr(tokens, "load_encoding", broken)
    monkeypatch.setattr(tokens, "load_python_encoding", broken)
    counter = TokenCounter("o200k_base")

    assert counter.count_text("x" * 10) == 4  # ceil(10 / 3)
    assert not counter.exact
    assert "estimating tokens" in caplog.text
