"""Exact byte-pair encoding in Python, for a process's first counts (docs/architecture.md §3).

Building tiktoken's Rust ``CoreBPE`` costs ~0.2 s of CPU with the GIL held (it copies 200k ranks into its
maps); a headless `catbuddy run` counts a few kilobytes before it exits. This encoder needs only the ranks
(~0.04 s from their marshal cache) and tiktoken's own split pattern, compiled by ``regex`` (the module
tiktoken itself depends on). It is tiktoken's algorithm: split the text with the pattern; a piece that is a
token is one token; any other piece starts as single bytes and repeatedly merges the adjacent pair whose
concatenation has the lowest rank, the leftmost on a tie, until no pair is a token. Its tokens are
tiktoken's tokens (``tests/context/counting/test_bpe.py`` compares them over code, prose and every script).

A bounded encoder refuses two kinds of text (``NeedsRust``), which the counter hands to the Rust encoder:
- a long piece: merging is quadratic in a piece's length;
- a character outside the Unicode both engines agree on. The split pattern's classes (letters, marks,
  numbers, spaces) come from each engine's own Unicode tables: ``regex`` may know a newer Unicode than
  tiktoken's Rust crate (U+323B0, new in Unicode 17, is a letter to one and not the other). A character
  assigned in CPython's own Unicode database, when that database is no newer than ``AGREED_UNICODE``, is
  classified alike by both (every such code point was compared when this was written); with a newer
  CPython database, only ASCII text is taken.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

MAX_PIECE_BYTES = 256  # a longer piece (a base64 blob, a minified line) costs more here than in Rust
# The newest Unicode that tiktoken's Rust tables (tiktoken >= 0.8) and `regex` (>= 2023.6.3) both cover.
AGREED_UNICODE = (15, 0, 0)
UNASSIGNED = "Cn"


class NeedsRust(ValueError):
    """Text this encoder does not take (a long piece, a character too new): count it with tiktoken's."""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


_CPYTHON_UNICODE_AGREES = _version(unicodedata.unidata_version) <= AGREED_UNICODE


def known_characters(text: str) -> bool:
    """Whether both engines classify every character of ``text`` alike (see the module's docstring)."""
    if text.isascii():
        return True
    if not _CPYTHON_UNICODE_AGREES:
        return False
    category = unicodedata.category
    return all(category(char) != UNASSIGNED for char in set(text) if char > "\x7f")


class PythonBpe:
    """``encode_ordinary`` with tiktoken's results, built in milliseconds from the ranks.

    ``bounded=False`` (when tiktoken's Rust encoder cannot start) takes every text: long pieces slowly, and
    characters newer than ``AGREED_UNICODE`` as ``regex`` classifies them."""

    def __init__(self, ranks: Mapping[bytes, int], pattern: str, bounded: bool = True):
        import regex  # tiktoken's own dependency; ~15 ms, so only when this encoder is built

        self.ranks = ranks
        self.bounded = bounded
        self._split: Any = regex.compile(pattern).findall

    def encode_ordinary(self, text: str) -> list[int]:
        if self.bounded and not known_characters(text):
            raise NeedsRust("a character newer than the Unicode both engines agree on")
        try:
            pieces = [piece.encode("utf-8") for piece in self._split(text)]
        except UnicodeEncodeError:
            # As tiktoken does: a lone surrogate becomes U+FFFD before the text is split.
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            pieces = [piece.encode("utf-8") for piece in self._split(text)]
        tokens: list[int] = []
        ranks = self.ranks
        for piece in pieces:
            rank = ranks.get(piece)
            if rank is not None:
                tokens.append(rank)
            else:
                tokens += self._merge(piece)
        return tokens

    def _merge(self, piece: bytes) -> list[int]:
        if self.bounded and len(piece) > MAX_PIECE_BYTES:
            raise NeedsRust(f"a {len(piece)}-byte piece")
        ranks = self.ranks
        parts = [piece[i : i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best: int | None = None
            at = -1
            for i in range(len(parts) - 1):
                rank = ranks.get(parts[i] + parts[i + 1])
                if rank is not None and (best is None or rank < best):
                    best, at = rank, i
            if best is None:
                break
            parts[at : at + 2] = [parts[at] + parts[at + 1]]
        return [ranks[part] for part in parts]
