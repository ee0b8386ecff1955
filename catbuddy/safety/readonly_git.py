"""`git`: read-only subcommands and forms, the ones that change the repository, and global options that
make git run a configured program (after Codex's is_safe_command.rs rules)."""

from __future__ import annotations

from catbuddy.safety.readonly_base import READ, Effect, Ruling, long_option, operands, short_letters

GIT_GLOBAL_VALUES = frozenset(
    {"-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--list-cmds"}
)
GIT_GLOBAL_RUNS = ("-c", "--config-env", "--exec-path", "-p", "--paginate")  # run configured programs
GIT_READERS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "annotate",
        "shortlog",
        "describe",
        "rev-parse",
        "rev-list",
        "ls-files",
        "ls-tree",
        "cat-file",
        "show-ref",
        "merge-base",
        "name-rev",
        "count-objects",
        "for-each-ref",
        "diff-tree",
        "diff-files",
        "diff-index",
        "grep",
        "whatchanged",
        "cherry",
        "range-diff",
        "var",
        "check-ignore",
        "check-attr",
        "version",
        "show-branch",
        "verify-commit",
        "verify-tag",
    }
)
# Subcommands that change the repository or the work tree (the destructive forms are told apart elsewhere).
GIT_WRITERS = frozenset(
    {
        "add",
        "am",
        "apply",
        "archive",
        "bisect",
        "branch",
        "checkout",
        "cherry-pick",
        "clean",
        "clone",
        "commit",
        "config",
        "fetch",
        "format-patch",
        "gc",
        "init",
        "merge",
        "mv",
        "notes",
        "prune",
        "pull",
        "push",
        "rebase",
        "reflog",
        "remote",
        "repack",
        "replace",
        "reset",
        "restore",
        "revert",
        "rm",
        "sparse-checkout",
        "stash",
        "submodule",
        "switch",
        "tag",
        "update-index",
        "update-ref",
        "worktree",
        "maintenance",
        "lfs",
        "filter-branch",
    }
)
GIT_WHOLE_OPTIONS = frozenset({"--text", "--filter", "--exit-code", "--ext-grep"})
GIT_OUTPUT_FLAGS = ("--output",)
GIT_RUN_FLAGS = (
    "--ext-diff",
    "--textconv",
    "--exec",
    "--upload-pack",
    "--receive-pack",
    "--open-files-in-pager",
    "--filters",
)
GIT_BRANCH_LISTS = frozenset(
    {
        "--list",
        "-l",
        "--show-current",
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-v",
        "-vv",
        "--verbose",
        "--no-color",
        "--color",
        "--no-column",
        "--column",
        "-i",
        "--ignore-case",
        "--omit-empty",
    }
)
GIT_BRANCH_LIST_VALUES = (
    "--format",
    "--sort",
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--abbrev",
    "--color",
    "--column",
)
# Filters that put `git branch` in list mode whatever follows (builtin/branch.c sets `list` for them), so
# `git branch --contains X` lists; a bare `git branch X` creates X.
GIT_BRANCH_IMPLY_LIST = ("--contains", "--no-contains", "--merged", "--no-merged", "--points-at")
GIT_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "--null",
        "-z",
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--includes",
        "--type",
        "--bool",
        "--int",
        "--path",
        "get",
        "list",
    }
)


def git_subcommand(args: list[str]) -> tuple[int, str | None, str | None]:
    """The index and name of git's subcommand after its global options, and a global option that makes
    git run a configured program (`-c core.pager=…`, `--exec-path`), if any."""
    runs: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith(GIT_GLOBAL_RUNS) and runs is None:
            runs = "-c" if arg.startswith("-c") else arg.split("=")[0]
            i += 2 if arg in ("-c", "--config-env") else 1
            continue
        if arg in GIT_GLOBAL_VALUES:
            i += 2
            continue
        if arg.startswith("-"):
            i += 1
            continue
        return i, arg, runs
    return i, None, runs


def git_rule(args: list[str]) -> Ruling:
    index, sub, runs = git_subcommand(args)
    if runs is not None:
        return Ruling(Effect.EXEC, f"`git {runs}` makes git run a configured program", sub)
    if sub is None:
        return READ  # `git`, `git --version`: prints
    rest = args[index + 1 :]
    for arg in rest:
        if arg.split("=", 1)[0] in GIT_WHOLE_OPTIONS:
            continue  # a real option of its own, not an abbreviation of `--textconv` or `--filters`
        if long_option(arg, *GIT_OUTPUT_FLAGS):
            return Ruling(Effect.WRITE, f"`git {sub} --output` writes a file", sub)
        if long_option(arg, *GIT_RUN_FLAGS) or (sub == "grep" and "O" in short_letters(arg, "eEfABCm")):
            return Ruling(Effect.EXEC, f"`git {sub} {arg.split('=')[0]}` runs another program", sub)
    if sub in GIT_READERS:
        return Ruling(Effect.READ, "reads only", sub)
    listing = _git_listing(sub, rest)
    if listing is not None:
        return Ruling(
            Effect.READ if listing else Effect.WRITE,
            "reads only" if listing else f"`git {sub}` changes the repository",
            sub,
        )
    if sub in GIT_WRITERS:
        return Ruling(Effect.WRITE, f"`git {sub}` changes the repository or the work tree", sub)
    return Ruling(
        Effect.EXEC, f"`git {sub}` is not a git command catbuddy knows (an alias may run anything)", sub
    )


def _git_listing(sub: str, rest: list[str]) -> bool | None:
    """For subcommands that list or change (branch, tag, remote, stash, config, …): True when this form only
    lists, False when it changes something, None for other subcommands."""
    named = operands(rest)
    if sub == "branch":
        listed = all(
            a in GIT_BRANCH_LISTS or long_option(a, *GIT_BRANCH_LIST_VALUES)
            for a in rest
            if a.startswith("-")
        )
        lists = bool({"--list", "-l"} & set(rest)) or any(long_option(a, *GIT_BRANCH_IMPLY_LIST) for a in rest)
        return listed and (not named or lists)
    if sub == "tag":
        return not rest or bool({"-l", "--list"} & set(rest)) and "-d" not in rest
    if sub == "remote":
        return not named and all(a in ("-v", "--verbose") for a in rest) or named[:1] == ["get-url"]
    if sub in ("stash", "worktree", "notes", "reflog"):
        reads = {
            "stash": ("list", "show"),
            "worktree": ("list",),
            "notes": ("list", "show"),
            "reflog": ("show",),
        }[sub]
        return (sub == "reflog" and not named) or (bool(named) and named[0] in reads)
    if sub == "config":
        return (
            bool(set(rest) & (GIT_CONFIG_READS - {"--global", "--system", "--local", "--worktree"}))
            and all(a in GIT_CONFIG_READS or not a.startswith("-") for a in rest)
            and not (named and named[0] in ("set", "unset", "rename-section", "remove-section", "edit"))
        )
    return None
