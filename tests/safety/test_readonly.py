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
