"""The approval policy on command forms: known-safe commands run unasked, remembered approvals cover only
what the approved form did, destructive forms always ask, and every decision says why in one line.

Escalation probes are the dangerous variants from Codex's tests (openai/codex,
codex-rs/core/src/command_safety/is_safe_command.rs: `git_output_and_config_override_flags_are_not_safe`,
`unknown_or_partial`, `ripgrep_rules`, `base64_output_options_are_unsafe`,
`git_branch_mutating_flags_are_not_safe`); destructive forms follow `is_dangerous_command.rs`
(`git_reset_is_dangerous`, `bash_git_reset_is_dangerous`, `sudo_git_reset_is_dangerous`,
`usr_bin_git_is_dangerous`) and mistral-vibe's denylist tests (tests/tools/test_bash.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from peer_commands import DESTRUCTIVE, ESCALATIONS, KNOWN_SAFE

from catbuddy.config import Settings, ToolSettings
from catbuddy.safety.decision import GuardDecision
from catbuddy.safety.policy import ApprovalPolicy
from catbuddy.sandbox import SandboxStatus
from catbuddy.tools.shell import ExecTool
from catbuddy.workspace import Workspace

ACTIVE = SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap")
OFF = SandboxStatus("off", False, network=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("keep me\n")
    return Workspace(root, tmp_path / "home")


def policy(
    workspace: Workspace, mode: str, *, sandbox: SandboxStatus = ACTIVE, **tools: object
) -> ApprovalPolicy:
    settings = Settings(tools=ToolSettings(**tools))  # type: ignore[arg-type]
    return ApprovalPolicy(mode, settings, workspace, sandbox=sandbox)


def decide(p: ApprovalPolicy, command: str) -> GuardDecision:
    return p.decide(ExecTool(), {"command": command})


# --- known-safe commands ---


@pytest.mark.parametrize("command", KNOWN_SAFE)
def test_a_known_safe_command_runs_unasked_in_auto_edit(workspace: Workspace, command: str) -> None:
    decision = decide(policy(workspace, "auto-edit"), command)
    assert decision.action == "allow", decision
    assert decision.reason.startswith("read-only: ")


def test_a_known_safe_command_runs_unasked_in_ask_while_the_setting_and_the_sandbox_are_on(
    workspace: Workspace,
) -> None:
    assert decide(policy(workspace, "ask"), "git log -n 5").action == "allow"
    off = decide(policy(workspace, "ask", auto_allow_read_only=False), "git log -n 5")
    assert (
        off.action == "ask" and off.reason == "read-only: git log (asks: tools.auto_allow_read_only is off)"
    )
    unsandboxed = decide(policy(workspace, "ask", sandbox=OFF), "git log -n 5")
    assert unsandboxed.action == "ask" and unsandboxed.reason.endswith("(asks: no sandbox)")


def test_a_writing_command_still_asks_in_auto_edit(workspace: Workspace) -> None:
    decision = decide(policy(workspace, "auto-edit"), "git log -n 5 && pytest -q")
    assert decision.action == "ask" and decision.suggested_pattern == "pytest"  # the read-only part runs
    assert decision.reason == "writes in the work root: runs `pytest`"


# --- remembered approvals, flag by flag ---


@pytest.mark.parametrize(("benign", "probe"), ESCALATIONS)
def test_an_added_writing_or_executing_flag_asks_again_after_a_session_approval(
    workspace: Workspace, benign: str, probe: str
) -> None:
    p = policy(workspace, "ask", auto_allow_read_only=False)  # so the benign command asks first
    first = decide(p, benign)
    assert first.action == "ask" and first.suggested_pattern
    p.remember(first.suggested_pattern)  # "allow for this session"
    assert decide(p, benign).action == "allow"
    again = decide(p, probe)
    assert again.action == "ask", again


@pytest.mark.parametrize(("benign", "probe"), ESCALATIONS)
def test_allow_commands_remembers_read_only_forms_too(workspace: Workspace, benign: str, probe: str) -> None:
    prefix = " ".join(benign.split()[:2]) if benign.startswith("git") else benign.split()[0]
    p = policy(workspace, "ask", auto_allow_read_only=False, allow_commands=(prefix,))
    assert decide(p, benign).action == "allow"
    assert decide(p, probe).action == "ask"


@pytest.mark.parametrize(
    ("command", "pattern", "words"),
    [
        ("git log -n 5", "git log", "git log, read-only forms"),
        (
            "git log --output=x",
            "git log",
            "git log, forms that read or write files, not ones that run other programs",
        ),
        ("pytest -q", "pytest", "pytest, any form except destructive ones"),
    ],
)
def test_the_decision_says_in_words_what_the_session_approval_remembers(
    workspace: Workspace, command: str, pattern: str, words: str
) -> None:
    decision = decide(policy(workspace, "ask", auto_allow_read_only=False), command)
    assert (decision.suggested_pattern, decision.remembers) == (pattern, words)


def test_a_session_approval_of_a_writing_form_covers_that_form_not_running_programs(
    workspace: Workspace,
) -> None:
    p = policy(workspace, "ask")
    p.remember(decide(p, "git log --output=log.txt").suggested_pattern or "")
    assert decide(p, "git log --output=other.txt").action == "allow"
    assert decide(p, "git log --ext-diff").action == "ask"


def test_an_unknown_program_is_remembered_for_any_form(workspace: Workspace) -> None:
    p = policy(workspace, "ask")
    p.remember("pytest")
    assert decide(p, "pytest -x --lf tests").action == "allow"


# --- the destructive class ---


@pytest.mark.parametrize("mode", ["ask", "auto-edit"])
@pytest.mark.parametrize(("command", "allowed", "benign"), DESTRUCTIVE)
def test_a_destructive_form_asks_whatever_the_allow_list_says(
    workspace: Workspace, mode: str, command: str, allowed: str, benign: str
) -> None:
    p = policy(workspace, mode, allow_commands=(allowed, "echo"))
    decision = decide(p, command)
    assert decision.action == "ask" and not decision.rememberable, decision
    assert decision.reason.startswith("destructive: ") and "whatever the allow-list says" in decision.reason
    assert decision.headless.startswith("Refused: ")
    p.remember(allowed)
    assert not decide(p, benign).reason.startswith("destructive"), benign


@pytest.mark.parametrize(("command", "allowed", "benign"), DESTRUCTIVE)
def test_a_destructive_form_runs_in_yolo(
    workspace: Workspace, command: str, allowed: str, benign: str
) -> None:
    decision = decide(policy(workspace, "yolo"), command)
    assert decision.action == "allow" and decision.reason.startswith("destructive: ")


def test_overwriting_a_new_file_is_not_destructive(workspace: Workspace) -> None:
    decision = decide(policy(workspace, "auto-edit"), "echo x > new.txt")
    assert (
        decision.action == "ask" and decision.reason == "writes in the work root: `> new.txt` writes a file"
    )


@pytest.mark.parametrize(
    "command",
    ["sudo git reset --hard", "sudo ls", "bash -lc 'sudo ls'", "env sudo ls", "/usr/bin/sudo ls", "sudo -s"],
)
def test_sudo_in_any_wrapper_cannot_work_in_the_sandbox_and_says_so(
    workspace: Workspace, command: str
) -> None:
    for mode in ("ask", "auto-edit"):
        asked = decide(policy(workspace, mode, allow_commands=("sudo", "ls")), command)
        assert asked.action == "ask" and "cannot work inside the sandbox" in asked.reason, asked
    refused = decide(policy(workspace, "yolo"), command)
    assert refused.action == "deny" and "cannot work inside the sandbox" in refused.reason
    assert decide(policy(workspace, "yolo", sandbox=OFF), command).action == "allow"
    unsandboxed = decide(policy(workspace, "auto-edit", sandbox=OFF), command)
    assert unsandboxed.action == "ask" and unsandboxed.reason.startswith("destructive: `sudo`")


# --- one line for every decision ---


@pytest.mark.parametrize(
    ("command", "action", "start"),
    [
        ("git status", "allow", "read-only: git status"),
        ("pytest -q", "ask", "writes in the work root: runs `pytest`"),
        ("git reset --hard", "ask", "destructive: `git reset --hard` discards uncommitted changes"),
        ("$(echo ls) -la", "ask", "dynamic: catbuddy cannot tell what it runs"),
        ("cp notes.txt /etc/notes", "ask", "outside the work root: `cp` writes /etc/notes"),
        ("rm -rf /", "deny", "refused: recursive rm of /"),
    ],
)
def test_every_decision_explains_itself_in_one_line(
    workspace: Workspace, command: str, action: str, start: str
) -> None:
    decision = decide(policy(workspace, "auto-edit"), command)
    assert decision.action == action and decision.reason.startswith(start), decision
    assert "\n" not in decision.reason


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "yolo"])
@pytest.mark.parametrize("command", ["X=1", "export X=1", "# a comment", "(X=1)"])
def test_a_line_that_runs_no_command_is_allowed(workspace: Workspace, mode: str, command: str) -> None:
    decision = decide(policy(workspace, mode), command)
    assert decision.action == "allow" and decision.reason == "read-only: it runs no command"
