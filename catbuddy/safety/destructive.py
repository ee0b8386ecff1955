"""The destructive class: legal commands that throw away work the sandbox does not protect.

The sandbox lets a command write the work root, so it cannot stop `git reset --hard` from discarding
uncommitted changes. These forms ask in `ask` and `auto-edit` whatever a remembered prefix or
`allow_commands` says, and say why; in `yolo` they run (the turn's checkpoint keeps them reversible):

- git: `reset --hard` (and any `reset` but `--soft`, as Codex counts it), `rm -f`, `checkout -- <paths>` / `checkout .` / `checkout -f`, `restore` (of the work tree),
  `clean -f`, `stash drop|clear`, `branch -D`, `push --force` (or a `+refspec`), `rebase`;
- `git switch --discard-changes`/`-f`, `git push origin :branch` (deletes it), `git clean` without `-n`;
- `rm -r` or `rm -f` of anything, `truncate`, `> file` or `tee file` over a file that exists;
- anything run through `sudo` (or `doas`, `pkexec`, `run0`, `su`), in any wrapper.

Codex's `is_dangerous_command.rs` tests (openai/codex, codex-rs/core/src/command_safety) and
mistral-vibe's denylist tests name these forms; the list here follows the issue that asked for them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from catbuddy.safety.readonly import NULL_DEVICES
from catbuddy.safety.readonly_base import short_letters
from catbuddy.safety.readonly_git import git_subcommand

if TYPE_CHECKING:
    from catbuddy.safety.shell_model import Segment

PRIVILEGED = frozenset({"sudo", "doas", "pkexec", "run0", "su"})
OVERWRITING = frozenset({">", ">|", "&>"})  # `>>` appends: it keeps what is there


def privilege(segment: Segment) -> str | None:
    """The privilege wrapper (`sudo`, …) a segment runs under, in any wrapper chain; None without one."""
    found = [w for w in segment.wrappers if w in PRIVILEGED]
    if found:
        return found[0]
    return segment.name if segment.name in PRIVILEGED else None


def destructive_reason(segment: Segment, work_root: Path) -> str | None:
    """Why ``segment`` is destructive, in words; None when it is not."""
    if segment.rough:
        return None
    wrapper = privilege(segment)
    if wrapper:
        return f"`{wrapper}` runs it as root, beyond what catbuddy can check or undo"
    values = [w.static for w in segment.args]
    args = [v for v in values if v is not None]
    name = segment.name
    if name == "git" and len(args) == len(values):
        reason = _git(args)
        if reason:
            return reason
    rm_flags = {letter for a in args if a.startswith("-") and not a.startswith("--") for letter in a[1:]}
    if name == "rm" and ("--recursive" in args or rm_flags & {"r", "R"}):
        return "`rm -r` deletes whole directory trees, which the sandbox lets it do in the work root"
    if name == "rm" and ("--force" in args or "f" in rm_flags):
        return "`rm -f` deletes without asking, write-protected files too"
    if name == "truncate":
        return "`truncate` cuts files to a size, discarding what they held"
    if name == "tee" and not any(
        a in ("-a", "--append") or "a" in short_letters(a, "") for a in args if a.startswith("-")
    ):
        existing = _existing([a for a in args if not a.startswith("-")], segment, work_root)
        if existing:
            return f"`tee {existing}` overwrites a file that exists"
    return _overwrite(segment, work_root)


def _existing(values: list[str], segment: Segment, work_root: Path) -> str | None:
    """The first of ``values`` that names a regular file that exists (relative to where it runs)."""
    for value in values:
        if value in NULL_DEVICES or value.startswith("/dev/"):
            continue
        for cwd in sorted(segment.cwds or {str(work_root)}):
            if Path(os.path.normpath(Path(cwd) / value)).is_file():
                return value
    return None


def _git(args: list[str]) -> str | None:
    index, sub, _ = git_subcommand(args)
    rest = args[index + 1 :]
    flags = {letter for a in rest if a.startswith("-") and not a.startswith("--") for letter in a[1:]}
    if sub == "reset" and "--hard" in rest:
        return "`git reset --hard` discards uncommitted changes"
    if sub == "reset" and "--soft" not in rest:
        return "`git reset` moves the branch or unstages changes, which the work tree does not show"
    if sub == "rm" and ("f" in flags or "--force" in rest):
        return "`git rm -f` deletes files even with uncommitted changes"
    if sub == "checkout" and ("--" in rest or "." in rest or "f" in flags or "--force" in rest):
        return "`git checkout -- <paths>` discards uncommitted changes to those files"
    if sub == "restore":
        staged_only = bool({"--staged", "-S"} & set(rest)) and not {"--worktree", "-W"} & set(rest)
        if not staged_only:
            return "`git restore` discards uncommitted changes to the files it restores"
    if sub == "clean" and not ({"-n", "--dry-run"} & set(rest) or "n" in flags):
        return "`git clean -f` deletes untracked files, which git cannot bring back"
    if sub == "switch" and ({"--force", "--discard-changes"} & set(rest) or "f" in flags):
        return "`git switch --discard-changes` discards uncommitted changes"
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return f"`git stash {rest[0]}` deletes stashed changes"
    if sub == "branch" and (
        "D" in flags or ("--delete" in rest or "d" in flags) and ("--force" in rest or "f" in flags)
    ):
        return "`git branch -D` deletes a branch even when its commits are not merged anywhere"
    if sub == "push" and (
        {"--force", "--mirror", "--delete"} & set(rest)
        or any(a.startswith("--force-with-lease") for a in rest)
        or "f" in flags
        or any(a.startswith(("+", ":")) for a in rest)
    ):
        return "`git push --force` overwrites the remote's history"
    if sub == "rebase":
        return "`git rebase` rewrites commits"
    return None


def _overwrite(segment: Segment, work_root: Path) -> str | None:
    """`> file` over a file that exists: its contents are gone before the command runs."""
    for op, target in segment.redirects:
        if op not in OVERWRITING or target.dynamic:
            continue
        existing = _existing(list(target.values), segment, work_root)
        if existing:
            return f"`{op} {existing}` overwrites a file that exists"
    return None
