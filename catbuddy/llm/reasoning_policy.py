"""Which provider wants what back: reasoning, thought signatures, effort and cache breakpoints.

One small policy per request, detected from the endpoint's host and the model's name, each part
overridable per model in config (``[model_options."<model>"]``, ``config.ModelOptions``):

- ``send_reasoning``: how an assistant message's reasoning goes back inside one user turn's tool
  loop. ``reasoning_content`` (DeepSeek's thinking mode, Kimi/Moonshot, xAI, Z.ai: a 400 without it
  for DeepSeek and Kimi), ``reasoning_details`` (OpenRouter and Vercel's gateway: the items verbatim,
  signatures and encrypted blobs included; Gemini 3 and Claude behind them refuse a tool loop
  without), ``none`` (OpenAI, Azure, Groq, Google's own endpoint: it would only cost tokens, and
  OpenAI refuses unknown message fields), or ``echo`` for any other endpoint (a local server, a
  proxy): what came as ``reasoning_content`` or ``reasoning_details`` goes back in that same field,
  plain ``reasoning`` text (and ``<think>`` or Magistral thinking) is not sent. Reasoning of earlier
  user turns is never sent: DeepSeek requires that, the others only pay for it (the working history
  sheds it at each new user turn).
- ``extra_content``: Google's OpenAI-compatible endpoint carries Gemini's thought signature in
  ``tool_calls[].extra_content``; only Google sends it, so it is kept except towards endpoints known
  to refuse unknown fields (OpenAI, Azure).
- ``effort_style``: how ``reasoning_effort`` is sent: OpenAI's ``reasoning_effort`` field, or
  OpenRouter's / Vercel's ``reasoning: {"effort": …}`` object.
- ``cache_breakpoints``: Claude behind an OpenAI-compatible endpoint caches only at explicit
  ``cache_control`` breakpoints (``catbuddy.llm.cache_breakpoints``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from catbuddy.config_checks import EFFORTS, SEND_REASONING

__all__ = ["EFFORTS", "SEND_REASONING", "ReasoningPolicy", "policy_for"]

GATEWAY_HOSTS = ("openrouter.ai", "ai-gateway.vercel.sh")
REASONING_CONTENT_HOSTS = (
    "api.deepseek.com",
    "moonshot.ai",
    "moonshot.cn",
    "api.x.ai",
    "z.ai",
    "bigmodel.cn",
)
REASONING_CONTENT_MODELS = ("deepseek-reasoner",)  # DeepSeek's own name for its thinking mode
# Reasoning is not sent back to these: not needed (Groq, Google's endpoint reads only the signatures),
# or unknown message fields are refused (OpenAI, Azure).
NO_SEND_BACK_HOSTS = ("groq.com", "api.openai.com", "openai.azure.com", "googleapis.com")
STRICT_HOSTS = ("api.openai.com", "openai.azure.com")
CLAUDE_NAMES = ("claude", "anthropic/")


@dataclass(frozen=True)
class ReasoningPolicy:
    send_reasoning: str  # reasoning_content, reasoning_details, echo or none
    extra_content: bool  # keep tool_calls[].extra_content (Gemini thought signatures)
    effort_style: str  # "reasoning_effort" or "reasoning" (OpenRouter/Vercel object)
    effort: str  # "" sends nothing
    cache_breakpoints: bool


def _host(base_url: str) -> str:
    return (urlparse(base_url).hostname or "").lower()


def _on(host: str, suffixes: tuple[str, ...]) -> bool:
    return any(host == s or host.endswith("." + s) or host.endswith(s) for s in suffixes)


def is_claude(model: str) -> bool:
    name = model.lower()
    return any(mark in name for mark in CLAUDE_NAMES)


def detect_send_reasoning(base_url: str, model: str) -> str:
    host, name = _host(base_url), model.lower()
    if _on(host, GATEWAY_HOSTS):
        return "reasoning_details"
    if _on(host, NO_SEND_BACK_HOSTS):
        return "none"
    if _on(host, REASONING_CONTENT_HOSTS) or name.startswith(REASONING_CONTENT_MODELS):
        return "reasoning_content"
    return "echo"


def policy_for(
    base_url: str,
    model: str,
    *,
    send_reasoning: str = "auto",
    effort: str = "",
    cache_breakpoints: bool | None = None,
    native_anthropic: bool = False,
) -> ReasoningPolicy:
    """The policy for ``model`` at ``base_url``; the keyword arguments are the model's config overrides."""
    host = _host(base_url)
    send = detect_send_reasoning(base_url, model) if send_reasoning == "auto" else send_reasoning
    gateway = _on(host, GATEWAY_HOSTS)
    breakpoints = (
        (is_claude(model) and not native_anthropic) if cache_breakpoints is None else cache_breakpoints
    )
    return ReasoningPolicy(
        send_reasoning=send,
        extra_content=not _on(host, STRICT_HOSTS),
        effort_style="reasoning" if gateway else "reasoning_effort",
        effort=effort,
        cache_breakpoints=breakpoints,
    )
