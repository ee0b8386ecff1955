"""tiktoken's algorithm in Python gives tiktoken's tokens, and the counter uses it for a process's first
counts before handing over to the Rust encoder (docs/architecture.md §3, "The first request")."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import catbuddy
from catbuddy.context.counting import tokens
from catbuddy.context.counting.bpe import MAX_PIECE_BYTES, NeedsRust, known_characters
from catbuddy.context.counting.encodings import (
    ENCODING_SOURCES,
    TokenizerUnavailable,
    load_encoding,
    load_python_encoding,
)
from catbuddy.context.counting.tokens import QUICK_BUDGET_CHARS, TokenCounter

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
    "x" * 200,  # one long piece, within the bound
]
NEWER_THAN_AGREED = "\U000323b0"  # CJK Extension J, Unicode 17: a letter to `regex`, not to tiktoken's Rust


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
def test_on_any_text_the_python_encoder_gives_tiktokens_tokens_or_declines(name: str, text: str) -> None:
    try:
        tokens_in_python = load_python_encoding(name).encode_ordinary(text)
    except NeedsRust:
        assert not known_characters(text)
    else:
        assert tokens_in_python == load_encoding(name).encode_ordinary(text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_character_it_takes_is_classified_as_tiktoken_classifies_it(name: str) -> None:
    python, rust = load_python_encoding(name, bounded=False), load_encoding(name)
    taken = _sampled_known_characters()
    # Each character beside letters, digits, punctuation, spaces and itself: every class the pattern has.
    for start in range(0, len(taken), 2_000):
        probe = "".join(f"a{c}b {c}1 {c}/A{c}A\n{c}{c}'s\r\n" for c in taken[start : start + 2_000])
        assert python.encode_ordinary(probe) == rust.encode_ordinary(probe), hex(ord(taken[start]))


def _sampled_known_characters(run_stride: int = 16) -> list[str]:
    """Every non-ASCII character the bounded encoder takes, except inside long runs of one category (CJK
    ideographs, Hangul syllables, private use), where every ``run_stride``-th and both ends."""
    taken: list[str] = []
    run: list[str] = []
    for code in (*range(0x80, 0xD800), *range(0xE000, 0x110000)):
        char = chr(code)
        if run and unicodedata.category(run[-1]) != unicodedata.category(char):
            taken += run if len(run) <= 4 * run_stride else [*run[::run_stride], run[-1]]
            run = []
        if known_characters(char):
            run.append(char)
    return taken + run


def test_a_bounded_encoder_declines_a_long_piece_and_a_character_too_new() -> None:
    python = load_python_encoding("o200k_base")

    assert python.encode_ordinary("x" * MAX_PIECE_BYTES) == load_encoding("o200k_base").encode_ordinary(
        "x" * MAX_PIECE_BYTES
    )
    with pytest.raises(NeedsRust):
        python.encode_ordinary("a" + "qzx" * MAX_PIECE_BYTES)
    with pytest.raises(NeedsRust):
        python.encode_ordinary(f"{NEWER_THAN_AGREED}/A")


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


def test_a_character_newer_than_both_engines_agree_on_is_counted_by_the_rust_encoder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spy = _Spy(monkeypatch)
    counter = TokenCounter("cl100k_base")
    text = f"{NEWER_THAN_AGREED}/A and more"

    assert counter.count_text(text) == len(load_encoding("cl100k_base").encode_ordinary(text))
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
