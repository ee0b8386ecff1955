"""Known-safe (read-only) commands: each rule has a form that runs unasked and one that does not.

Test data are the peers' own cases, as data: Codex's `is_safe_command.rs` tests (openai/codex,
codex-rs/core/src/command_safety/is_safe_command.rs: `known_safe_examples`, `bash_lc_safe_examples*`,
`unknown_or_partial`, `git_output_and_config_override_flags_are_not_safe`, `ripgrep_rules`,
`base64_output_options_are_unsafe`) and mistral-vibe's bash permission tests
(mistralai/mistral-vibe, tests/tools/test_granular_permissions.py: `git status`, `cat README.md`, …).
"""

from __future__ import annotations

import pytest
from peer_commands import KNOWN_SAFE, NOT_SAFE, ROOT

from catbuddy.safety.readonly import explain_read_only, is_known_safe


@pytest.mark.parametrize("command", KNOWN_SAFE)
def test_a_read_only_command_is_known_safe(command: str) -> None:
    verdict = explain_read_only(command, ROOT)
    assert verdict.safe, verdict.reason
    assert verdict.reason.startswith("read-only: ")


@pytest.mark.parametrize("command", NOT_SAFE)
def test_a_command_that_writes_runs_code_or_is_unknown_is_not_known_safe(command: str) -> None:
    verdict = explain_read_only(command, ROOT)
    assert not verdict.safe, command
    assert verdict.reason and "\n" not in verdict.reason


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("git log --output=x", "`git log --output` writes a file"),
        ("find . -delete", "`find -delete` deletes what it finds"),
        ("sed -e 's/y/echo hi/e'", "the sed `e` flag runs a shell command"),
        ("rg --pre pwned", "`rg --pre` runs a program"),
        ("ls > out.txt", "`> out.txt` writes a file"),
        ("sudo ls", "`sudo` runs it with root privileges"),
        ("git -c core.pager=cat log", "`git -c` makes git run a configured program"),
    ],
)
def test_the_reason_names_what_makes_it_not_read_only(command: str, words: str) -> None:
    assert words in explain_read_only(command, ROOT).reason


def test_is_known_safe_is_the_stable_entry_point() -> None:
    assert is_known_safe("git status && git log -n 5", ROOT) is True
    assert is_known_safe("git status && git commit -m x", ROOT) is False
    assert is_known_safe("", ROOT) is False


# Each flag rule: a form that is read-only, and the nearest form that is not.
RULE_PAIRS = [
    ("git status", "git -c core.fsmonitor=x status"),
    ("git --no-pager log -n 3", "git --exec-path=/tmp/x log"),
    ("git log --stat", "git log --ext-diff"),
    ("git cat-file -p HEAD", "git cat-file --filters HEAD:a.txt"),
    ("git grep -n TODO", "git grep -O TODO"),
    ("git branch -a -v", "git branch -m old new"),
    ("git branch --contains HEAD~3", "git branch feature HEAD~3"),  # the filter implies --list
    ("git branch -r --merged origin/main", "git branch --track topic origin/main"),
    ("git tag -l 'v1.*'", "git tag v2.0"),
    ("git remote get-url origin", "git remote add fork https://x"),
    ("git stash show -p", "git stash pop"),
    ("git config --get user.email", "git config user.email me@x"),
    ("git reflog", "git reflog expire --all"),
    ("git worktree list", "git worktree add ../wt"),
    ("git version", "git frobnicate"),
    ("find . -type f -newer x", "find . -execdir ls ;"),
    ("sed -n '$p' f", "sed -n '1r /etc/passwd' f"),
    ("sed 's/a/b/g;s/c/d/' f", "sed 's/a/b/gw out' f"),
    ("sed -E -n '/^#/!p' f", "sed -nf script.sed f"),
    ("rg -n -i foo", "rg -nz foo"),
    ("sort -k2 -n f", "sort -nk2 -o f f"),
    ("base64 -d blob", "base64 --output=x blob"),
    ("tree -a -L 2", "tree -o listing.txt"),
    ("xxd blob", "xxd blob blob.hex"),
    ("uniq -d f", "uniq f f.out"),
    ("file -b f", "file -C -m magic"),
    ("date -u +%s", "date -s 2020-01-01"),
    ("hostname -f", "hostname newname"),
    ("yq '.a' f.yaml", "yq -i '.a = 1' f.yaml"),
    ("fd -e py", "fd -e py -x rm"),
    ("less -N f", "less -o log f"),
    ("env", "env PATH=/tmp/evil ls"),
    ("timeout 5 ls", "time -o out ls"),
    ("ls -la 2>/dev/null >/dev/null", "ls -la 2>err.log"),
    ("cat < notes.txt", "cat notes.txt >> all.txt"),
    ("git log | head -n 3", "git log | tee log.txt"),
    ("git log", "GIT_EXTERNAL_DIFF=x git log -p"),
    ("git diff --text a b", "git diff --textc a b"),  # --text is an option, --textc abbreviates --textconv
    ("rg foo", "RIPGREP_CONFIG_PATH=rc rg foo"),
    ("ls", "./ls"),
]


@pytest.mark.parametrize(("reads", "does_more"), RULE_PAIRS)
def test_each_rule_has_a_form_that_runs_and_one_that_asks(reads: str, does_more: str) -> None:
    assert is_known_safe(reads, ROOT), explain_read_only(reads, ROOT).reason
    assert not is_known_safe(does_more, ROOT), does_more


@pytest.mark.parametrize(
    "command",
    [
        "PATH=/tmp/evil; ls",
        "export PATH=/tmp/evil:$PATH && git status",
        "for PATH in /tmp/evil; do ls; done",
        "export LD_PRELOAD=/tmp/x.so; cat README.md",
        "GIT_DIR=/tmp/other/.git; export GIT_DIR; git log",
    ],
)
def test_a_loader_variable_set_anywhere_in_the_line_makes_it_not_read_only(command: str) -> None:
    verdict = explain_read_only(command, ROOT)
    assert not verdict.safe and "in the line changes what" in verdict.reason


@pytest.mark.parametrize(
    "command",
    ["sort --outp=sorted.txt f", "sort --o sorted.txt f", "git log --out=x", "sort --compress=gzip f"],
)
def test_an_abbreviated_long_option_is_read_as_the_option_it_abbreviates(command: str) -> None:
    assert not is_known_safe(command, ROOT)  # GNU getopt and git accept any unambiguous prefix
