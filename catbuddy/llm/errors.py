"""Errors a provider call can end in, each with a message and a hint saying what to do.

``from_openai`` maps the openai SDK's exceptions (imported lazily: this module stays cheap) onto
these classes. Messages never contain the API key: anything that looks like it is scrubbed.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

from catbuddy.errors import CatbuddyError
from catbuddy.redact import redact_text

RAW_CHARS = 500  # how much of an upstream provider's raw error (OpenRouter's metadata.raw) is quoted
# Statuses the OpenAI SDK itself treats as transient; we follow it.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
CONTEXT_PATTERNS = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long|"
    r"exceeds? the (?:model'?s? )?(?:max|context)",
    re.IGNORECASE,
)


class LLMError(CatbuddyError):
    """A provider call failed. ``message`` says what happened, ``hint`` what the user can do.

    ``partial_text`` is the reply text that had already streamed to the user when the call broke
    ("" when nothing had): the caller keeps it in the history, marked as cut off."""

    def __init__(
        self, message: str, hint: str = "", *, status: int | None = None, partial_text: str = ""
    ) -> None:
        super().__init__(message, hint)
        self.status = status
        self.partial_text = partial_text

    def __str__(self) -> str:
        return self.message  # the turn shows the hint beside it; a retry line or a log wants the message


class AuthenticationError(LLMError):
    """The key is missing or was rejected."""


class ModelNotFound(LLMError):
    def __init__(self, message: str, hint: str = "", *, model: str = "", status: int | None = None) -> None:
        super().__init__(message, hint, status=status)
        self.model = model


class EndpointUnreachable(LLMError):
    def __init__(
        self, message: str, hint: str = "", *, base_url: str = "", status: int | None = None
    ) -> None:
        super().__init__(message, hint, status=status)
        self.base_url = base_url


class ContextLengthExceeded(LLMError):
    """The request did not fit the model's window; the agent loop compacts and retries once."""


class RateLimited(LLMError):
    def __init__(
        self, message: str, hint: str = "", *, retry_after: float | None = None, status: int | None = 429
    ) -> None:
        super().__init__(message, hint, status=status)
        self.retry_after = retry_after


class ProviderError(LLMError):
    """Anything else: server errors, timeouts, rejected requests, broken streams."""


class EmptyResponse(ProviderError):
    """The provider answered, but with nothing: no choices, no stream events, or no text and no calls."""


class MalformedResponse(ProviderError):
    """The provider sent a chunk or body that is not a chat completion (bad JSON, wrong shape)."""


class StreamInterrupted(ProviderError):
    """The call broke after part of the reply had streamed; ``partial_text`` holds what arrived."""


@dataclass(frozen=True)
class CallContext:
    """What an error message needs to name: the model, the endpoint, the key's variable."""

    model: str
    base_url: str
    api_key_env: str
    secret: str = ""  # the key itself, only so it can be scrubbed from messages
    timeout: float | None = None  # request_timeout: the whole answer
    connect_timeout: float | None = None
    idle_timeout: float | None = None  # stream_idle_timeout: longest silence inside a stream
    key_missing: bool = False  # no key was configured anywhere: a 401/403 means "missing", not "wrong"

    def scrub(self, text: str) -> str:
        return redact_text(text, (self.secret,))


def _body(exc: Any) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        return inner if isinstance(inner, dict) else {}
    return {}


def server_message(exc: Any) -> str:
    """The provider's own words (the error body's message), or the SDK's text. OpenRouter says only
    "Provider returned error" and puts the upstream provider's name and words in ``metadata``."""
    body = _body(exc)
    message = body.get("message")
    if isinstance(message, str) and message:
        metadata = body.get("metadata")
        if isinstance(metadata, dict):
            raw, name = metadata.get("raw"), metadata.get("provider_name")
            if isinstance(raw, dict | list):
                raw = json.dumps(raw, ensure_ascii=False)
            if isinstance(raw, str) and raw.strip():
                upstream = f" {name}" if isinstance(name, str) and name else ""
                return f"{message} (upstream{upstream}: {raw.strip()[:RAW_CHARS]})"
        return message
    if isinstance(getattr(exc, "body", None), str) and exc.body.strip():
        return str(exc.body.strip())[:500]
    return str(getattr(exc, "message", "") or exc)


def retry_after_seconds(exc: Any, now: float | None = None) -> float | None:
    """Retry-After from a response: ``retry-after-ms``, seconds, or an HTTP date."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        import email.utils  # only for an HTTP-date Retry-After: the email package costs ~3 ms at start-up

        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - (time.time() if now is None else now))


def is_retryable(exc: BaseException) -> bool:
    """429 (but not an exhausted quota), 408/409, 5xx, timeouts and connection failures."""
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429 and _body(exc).get("code") == "insufficient_quota":
            return False
        return exc.status_code in RETRYABLE_STATUSES or exc.status_code >= 500
    return False


def retry_reason(exc: BaseException) -> str:
    """A few words for the "retrying…" line."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate limited (429)"
        return f"server error ({exc.status_code})"
    return type(exc).__name__


def from_openai(exc: BaseException, ctx: CallContext, *, mid_stream: bool = False) -> LLMError:
    """The catbuddy error for an openai SDK exception (``mid_stream``: part of the reply had arrived)."""
    import openai

    if mid_stream and isinstance(exc, openai.APIConnectionError):
        return ProviderError(
            f"The connection to {ctx.base_url} broke while the reply was streaming.",
            "The reply was cut off; try again.",
        )
    if isinstance(exc, openai.APITimeoutError):
        waited = f" after {ctx.timeout:g} s" if ctx.timeout else ""
        return ProviderError(
            f"{ctx.base_url} did not answer in time{waited}.",
            "Try again; for slow local models raise `request_timeout` in config.toml.",
        )
    if isinstance(exc, openai.APIConnectionError):
        return EndpointUnreachable(
            f"Cannot connect to {ctx.base_url}.",
            "Check that the server is running and the base URL (OPENAI_BASE_URL or `base_url`) is right.",
            base_url=ctx.base_url,
        )
    if isinstance(exc, openai.APIStatusError):
        return _from_status(exc, ctx)
    if isinstance(exc, openai.APIError):  # e.g. an error event inside a stream
        return ProviderError(
            ctx.scrub(f"The provider reported an error: {server_message(exc)}"),
            "Try again; if it keeps happening, check the provider's status page or try another model.",
        )
    return ProviderError(ctx.scrub(f"Unexpected error from the provider: {exc}"), "Try again.")


def missing_key_hint(api_key_env: str) -> str:
    """How to configure a key: the variable the config names, the config file, the set-up screen."""
    return (
        f'Set one: `export {api_key_env}=sk-...`, or `api_key = "sk-..."` in config.toml '
        "(~/.catbuddy/config.toml, or $CATBUDDY_HOME/config.toml); the set-up screen of `catbuddy` "
        "writes it for you. A local server that needs no key works without one."
    )


def missing_key(ctx: CallContext, status: int | None) -> AuthenticationError:
    """The endpoint wants a key and none is configured: say that, not "incorrect API key" (the server's
    own words would say the placeholder we sent is wrong, which is beside the point)."""
    answered = f" (it answered {status})" if status else ""
    return AuthenticationError(
        f"No API key configured: {ctx.base_url} needs one{answered}, and neither `api_key` in "
        f"config.toml nor {ctx.api_key_env} is set.",
        missing_key_hint(ctx.api_key_env),
        status=status,
    )


def _from_status(exc: Any, ctx: CallContext) -> LLMError:
    status: int = exc.status_code
    body = _body(exc)
    code = str(body.get("code") or "")
    said = ctx.scrub(server_message(exc))
    if ctx.key_missing and (status in (401, 403) or code == "invalid_api_key"):
        return missing_key(ctx, status)
    if status == 401 or code == "invalid_api_key":
        return AuthenticationError(
            f"{ctx.base_url} rejected the API key (401): {said}",
            f"Set a valid key in {ctx.api_key_env} (or `api_key_env` in config.toml).",
            status=status,
        )
    if code == "model_not_found" or (status == 404 and "model" in said.lower()):
        return ModelNotFound(
            f"The model `{ctx.model}` is not available at {ctx.base_url}: {said}",
            "Pick another with /model or CATBUDDY_MODEL (or `model` in config.toml).",
            model=ctx.model,
            status=status,
        )
    if status == 404:
        return ProviderError(
            f"{ctx.base_url} has no chat completions endpoint (404): {said}",
            "Check the base URL; OpenAI-compatible servers usually need it to end in /v1.",
            status=status,
        )
    if code == "context_length_exceeded" or (status in (400, 413) and CONTEXT_PATTERNS.search(said)):
        return ContextLengthExceeded(
            f"The request is longer than {ctx.model}'s context window: {said}",
            "Run /compact, or set the model's `context_window` in config.toml to its real size.",
            status=status,
        )
    if status == 429:
        if code == "insufficient_quota":
            return RateLimited(
                f"Your quota at {ctx.base_url} is used up: {said}", "Check your plan and billing."
            )
        return RateLimited(
            f"Rate limited by {ctx.base_url} (429): {said}",
            "Wait a moment and try again, or raise `max_retries` in config.toml.",
            retry_after=retry_after_seconds(exc),
        )
    if status == 403:
        return AuthenticationError(
            f"{ctx.base_url} refused access (403): {said}",
            f"Check that the key in {ctx.api_key_env} may use `{ctx.model}`.",
            status=status,
        )
    if status >= 500:
        return ProviderError(
            f"{ctx.base_url} had a server error ({status}): {said}", "Try again in a moment.", status=status
        )
    return ProviderError(
        f"{ctx.base_url} rejected the request ({status}): {said}",
        "The server refused the request as sent; check the model and its settings in config.toml.",
        status=status,
    )
