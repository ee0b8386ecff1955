"""Exact byte-pair encoding in Python, for a process's first counts (docs/architecture.md §3).

Building tiktoken's Rust ``CoreBPE`` costs ~0.2 s of CPU with the GIL held (it copies 200k ranks into its
maps); a headless `catbuddy run` counts a few kilobytes before it exits. This encoder needs only the ranks
(~0.04 s from their marshal cache) and tiktoken's own split pattern, compiled by ``regex`` (the module
tiktoken itself depends on). It is tiktoken's algorithm: split the text with the pattern; a piece that is a
token is one token; any other piece starts as single bytes and repeatedly merges the adjacent pair whose
concatenation has the lowest rank, the leftmost on a tie, until no pair is a token. Its tokens are
tiktoken's tokens (``tests/context/test_bpe.py`` compares them over code, prose and every script).

Merging is quadratic in a piece's length, so a bounded encoder refuses a long piece (``PieceTooLong``) and
the counter hands that text to the Rust encoder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_PIECE_BYTES = 256  # a longer piece (a base64 blob, a minified line) costs more here than in Rust


class PieceTooLong(ValueError):
    """A piece longer than the encoder's bound: count this text with tiktoken's Rust encoder."""


class PythonBpe:
    """``encode_ordinary`` with tiktoken's results, built in milliseconds from the ranks."""

    def __init__(self, ranks: Mapping[bytes, int], pattern: str, max_piece_bytes: int | None = MAX_PIECE_BYTES):
        import regex  # tiktoken's own dependency; ~15 ms, so only when this encoder is built

        self.ranks = ranks
        self.max_piece_bytes = max_piece_bytes
        self._split: Any = regex.compile(pattern).findall

    def encode_ordinary(self, text: str) -> list[int]:
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
        if self.max_piece_bytes is not None and len(piece) > self.max_piece_bytes:
            raise PieceTooLong(f"a {len(piece)}-byte piece")
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
