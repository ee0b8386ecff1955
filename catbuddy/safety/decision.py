"""What the approval policy answers for one tool call (``GuardDecision``), and the one-line explanations
every exec decision carries: read-only / writes in the work root / destructive / dynamic / outside the work
root / denied, each followed by why."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ALLOW, ASK, DENY = "allow", "ask", "deny"
# The kinds of exec decision, as the first words of its reason.
READ_ONLY = "read-only"
WRITES = "writes in the work root"
DESTRUCTIVE = "destructive"
DYNAMIC = "dynamic"
OUTSIDE = "outside the work root"
DENIED = "refused"  # the word the guard tests and the deny rules have always used


@dataclass(frozen=True)
class GuardDecision:
    action: str  # "allow", "ask" or "deny"
    reason: str = ""  # one line; for exec it starts with its kind ("read-only: git log")
    suggested_pattern: str | None = None  # what "allow for this session" remembers; None: it cannot
    grant: Path | None = None  # a protected file this one call may write once the user says yes
    sandbox: str = ""  # exec only: the sandbox the command runs in (SandboxStatus.label)
    headless: str = ""  # what to tell the model when nobody can be asked ('' : the usual refusal)
    remembers: str = ""  # "allow for this session" in words: "git log, read-only forms"

    @property
    def rememberable(self) -> bool:
        return bool(self.suggested_pattern)


def explained(kind: str, why: str) -> str:
    return f"{kind}: {why}"


def headless_refusal(reason: str) -> str:
    """What the model is told when a command needs approval and nobody can be asked."""
    return (
        f"Refused: this command needs the user's approval ({reason}), and catbuddy is running headless "
        "with nobody to ask. Do the task without it if you can (read-only commands such as `git status`, "
        "`ls`, `rg` run without approval); otherwise tell the user to rerun with `--approval yolo`."
    )
