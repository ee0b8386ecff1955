"""Approvals: what the model is told when a call is not approved. What the user is shown before it
(the command, the diff) is each tool's own ``Tool.preview`` (docs/architecture.md §8)."""

from __future__ import annotations

from catbuddy.agent.events import ApprovalChoice, ApprovalDecision

HEADLESS_REFUSAL = (
    "Refused: `{tool}` needs approval in the '{mode}' approval mode, and catbuddy is running without anyone "
    "to ask (headless). Do the task without it if you can; otherwise tell the user to rerun with "
    "`--approval auto-edit` (file edits and read-only commands) or `--approval yolo` (commands too)."
)
RULE_REFUSAL = "Refused by catbuddy's safety rules: {reason}"


def headless_refusal(tool: str, mode: str, reason: str) -> str:
    """The refusal a headless run gives the model, with the one-line reason the policy gave (its kind and why)."""
    text = HEADLESS_REFUSAL.format(tool=tool, mode=mode)
    return f"{text} Why it needs approval: {reason}" if reason.strip() else text


def refusal_text(decision: ApprovalDecision, reason: str = "") -> str:
    """What the model gets when the user denies a call: their note if they gave one, and the policy's one-line
    reason for asking (its kind and why), so the model knows what about the call needed a person."""
    if decision.choice is ApprovalChoice.DENY_WITH_NOTE and decision.note.strip():
        text = f"The user denied this call and said: {decision.note.strip()}"
    else:
        text = "The user denied this call. Do not retry it as is; ask the user or take another way."
    return f"{text} Why it needed approval: {reason.strip()}" if reason.strip() else text
