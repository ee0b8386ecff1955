"""What went wrong in one provider attempt, whether it may be retried, and what the user is told.

Every exception an attempt can end in (the openai SDK's, httpx's when the SDK lets one through, a
malformed chunk, our own stall timer, anything else) is classified into a ``Fault`` here, so the
provider never lets anything but an ``LLMError`` out. Kinds differ in how often they are retried:

- ``connect`` (refused, unknown host, connect timeout) fails fast: one retry at most, after a short
  pause (0.25 s), so a wrong base URL is reported within a few seconds;
- ``stall`` (no byte for ``stream_idle_timeout``) is retried once: each attempt already cost a full
  timeout; ``timeout`` (no complete answer within ``request_timeout``) is not retried at all;
- ``broken``, ``malformed`` and retryable HTTP statuses get the configured ``max_retries``;
- ``empty`` answers, rejected requests and requests we could not encode are never retried.

Nothing is retried once part of the reply has reached the user: ``interrupted`` turns the fault into a
``StreamInterrupted`` that carries the text that arrived.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlparse

from catbuddy.errors import CatbuddyError
from catbuddy.llm.errors import (
    CallContext,
    EmptyResponse,
    EndpointUnreachable,
    LLMError,
    MalformedResponse,
    ProviderError,
    StreamInterrupted,
    from_openai,
    is_retryable,
    retry_reason,
)

DETAIL_CHARS = 200  # how much of a parser's complaint is quoted


class FaultKind(StrEnum):
    CONNECT = "connect"
    STALL = "stall"
    TIMEOUT = "timeout"
    BROKEN = "broken"
    MALFORMED = "malformed"
    STATUS = "status"
    EMPTY = "empty"
    REQUEST = "request"


# Retries allowed per kind (None: the configured max_retries).
RETRY_CAPS: dict[FaultKind, int | None] = {
    FaultKind.CONNECT: 1,
    FaultKind.STALL: 1,
    FaultKind.TIMEOUT: 0,
    FaultKind.BROKEN: None,
    FaultKind.MALFORMED: None,
    FaultKind.STATUS: None,
    FaultKind.EMPTY: 0,
    FaultKind.REQUEST: 0,
}


class StallTimeout(CatbuddyError, TimeoutError):
    """A call ran out of time: ``idle`` (no byte for ``seconds``) or past its total deadline."""

    def __init__(self, seconds: float, *, idle: bool) -> None:
        super().__init__(f"no data for {seconds:g} s" if idle else f"no complete answer in {seconds:g} s")
        self.seconds = seconds
        self.idle = idle


class MalformedChunk(CatbuddyError, ValueError):
    """A chunk (or a whole completion) that parses but is not shaped like a chat completion."""


class UnsupportedChunk(MalformedChunk):
    """A chunk of a shape that is understood but not supported: asking again gets the same shape, so it
    is never retried (each retry would be billed)."""


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    retryable: bool
    reason: str  # a few words for the "retrying…" line
    error: LLMError  # what the user sees when we give up

    @property
    def retry_cap(self) -> int | None:
        return RETRY_CAPS[self.kind] if self.retryable else 0


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes (the SDK wraps httpx, which wraps httpcore, which wraps OSError)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _named(exc: BaseException, *names: str) -> bool:
    return any(klass.__name__ in names for klass in type(exc).__mro__)


def _host(ctx: CallContext) -> str:
    parsed = urlparse(ctx.base_url)
    return parsed.hostname or ctx.base_url


def _hostport(ctx: CallContext) -> str:
    parsed = urlparse(ctx.base_url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return f"{parsed.hostname}:{port}"


UNREACHABLE_HINT = (
    "Check that the server is running and the base URL (OPENAI_BASE_URL or `base_url`) is right."
)


def _connect_fault(exc: BaseException, ctx: CallContext) -> Fault | None:
    """Refused, unknown host or connect timeout; None when the connection itself was made."""
    chain = _chain(exc)
    if any(isinstance(e, socket.gaierror) for e in chain):
        return Fault(
            FaultKind.CONNECT,
            True,
            "host not found",
            EndpointUnreachable(
                f"Cannot connect to {ctx.base_url}: the host name {_host(ctx)!r} cannot be resolved.",
                "Check the host in the base URL (OPENAI_BASE_URL or `base_url`) and your network/DNS.",
                base_url=ctx.base_url,
            ),
        )
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return Fault(
            FaultKind.CONNECT,
            True,
            "connection refused",
            EndpointUnreachable(
                f"Cannot connect to {ctx.base_url}: connection refused (nothing listens on {_hostport(ctx)}).",
                UNREACHABLE_HINT,
                base_url=ctx.base_url,
            ),
        )
    if any(_named(e, "ConnectTimeout") for e in chain):
        waited = f" within {ctx.connect_timeout:g} s" if ctx.connect_timeout else ""
        return Fault(
            FaultKind.CONNECT,
            True,
            "connect timed out",
            EndpointUnreachable(
                f"Cannot connect to {ctx.base_url}: no answer to the connection attempt{waited}.",
                UNREACHABLE_HINT + " A slow network may need a larger `connect_timeout`.",
                base_url=ctx.base_url,
            ),
        )
    if any(_named(e, "ConnectError") for e in chain):
        return Fault(
            FaultKind.CONNECT,
            True,
            "connection failed",
            EndpointUnreachable(
                f"Cannot connect to {ctx.base_url}.", UNREACHABLE_HINT, base_url=ctx.base_url
            ),
        )
    return None


def _stall_fault(exc: StallTimeout, ctx: CallContext) -> Fault:
    if exc.idle:
        return Fault(
            FaultKind.STALL,
            True,
            f"no data for {exc.seconds:g} s",
            ProviderError(
                f"{ctx.base_url} sent nothing for {exc.seconds:g} s (stream_idle_timeout).",
                "Try again; a slow local model may need a larger `stream_idle_timeout` in config.toml.",
            ),
        )
    return Fault(
        FaultKind.TIMEOUT,
        False,
        "request timed out",
        ProviderError(
            f"{ctx.base_url} did not finish the reply within {exc.seconds:g} s (request_timeout).",
            "Try again; for slow local models raise `request_timeout` in config.toml.",
        ),
    )


def _detail(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:DETAIL_CHARS] or type(exc).__name__


def classify(exc: BaseException, ctx: CallContext) -> Fault:
    """The fault behind any exception of one attempt (never raises)."""
    import openai

    if isinstance(exc, LLMError):  # raised by us on purpose (e.g. an empty answer)
        return Fault(FaultKind.EMPTY if isinstance(exc, EmptyResponse) else FaultKind.STATUS, False, "", exc)
    if isinstance(exc, StallTimeout):
        return _stall_fault(exc, ctx)
    if isinstance(exc, UnicodeEncodeError):
        return Fault(
            FaultKind.REQUEST,
            False,
            "",
            ProviderError(
                f"The request could not be encoded as UTF-8 ({_detail(exc)}).",
                "This is a bug in catbuddy: please report it with the session file.",
            ),
        )
    connect = _connect_fault(exc, ctx)
    if connect is not None:
        return connect
    if isinstance(exc, openai.APITimeoutError) or any(_named(e, "TimeoutException") for e in _chain(exc)):
        # httpx's read timeout: stream_idle_timeout for a stream, request_timeout otherwise
        if ctx.idle_timeout is not None:
            return _stall_fault(StallTimeout(ctx.idle_timeout, idle=True), ctx)
        return _stall_fault(StallTimeout(ctx.timeout or 0, idle=False), ctx)
    if isinstance(exc, openai.APIConnectionError) or any(
        _named(e, "TransportError", "NetworkError", "RemoteProtocolError", "EndOfStream") for e in _chain(exc)
    ):
        return Fault(
            FaultKind.BROKEN,
            True,
            "connection failed",
            ProviderError(
                f"The connection to {ctx.base_url} broke before the reply arrived.", "Try again in a moment."
            ),
        )
    if isinstance(exc, openai.APIStatusError):
        return Fault(FaultKind.STATUS, is_retryable(exc), retry_reason(exc), from_openai(exc, ctx))
    if isinstance(exc, UnsupportedChunk):
        return Fault(
            FaultKind.MALFORMED,
            False,
            "unsupported response",
            MalformedResponse(
                ctx.scrub(
                    f"{ctx.base_url} sent a reply in a shape catbuddy does not support ({_detail(exc)})."
                ),
                "Not retried: the same request gets the same shape. Try another model, or report it with the log.",
            ),
        )
    if isinstance(
        exc, openai.APIResponseValidationError | ValueError | TypeError | AttributeError | KeyError
    ):
        return Fault(
            FaultKind.MALFORMED,
            True,
            "malformed response",
            MalformedResponse(
                ctx.scrub(f"{ctx.base_url} sent a malformed response ({_detail(exc)})."),
                "Try again; if it keeps happening, the endpoint is not speaking the OpenAI chat format.",
            ),
        )
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        return Fault(FaultKind.STATUS, False, "", from_openai(exc, ctx))
    return Fault(
        FaultKind.MALFORMED,
        True,
        "unexpected error",
        ProviderError(
            ctx.scrub(f"Unexpected error from the provider: {type(exc).__name__}: {_detail(exc)}"),
            "Try again; if it keeps happening, report it with the log (catbuddy's home, logs/).",
        ),
    )


def interrupted(fault: Fault, ctx: CallContext, partial_text: str) -> StreamInterrupted:
    """The error for a call that broke after output had reached the user (never retried)."""
    what = {
        FaultKind.STALL: f"{ctx.base_url} stopped sending while the reply was streaming ({fault.reason}).",
        FaultKind.TIMEOUT: f"{ctx.base_url} did not finish the reply within {ctx.timeout:g} s (request_timeout).",
        FaultKind.MALFORMED: f"{ctx.base_url} sent a malformed chunk while the reply was streaming.",
        FaultKind.BROKEN: f"The connection to {ctx.base_url} broke while the reply was streaming.",
        FaultKind.CONNECT: f"The connection to {ctx.base_url} broke while the reply was streaming.",
    }.get(fault.kind, f"The reply stopped while streaming: {fault.error.message}")
    kept = "what arrived is kept" if partial_text else "no text had arrived"
    return StreamInterrupted(
        ctx.scrub(what),
        f"The reply was cut off ({kept}); try again.",
        status=fault.error.status,
        partial_text=partial_text,
    )
