"""`catbuddy run "/review calc.py"` sends the custom command's prompt, with its model and tools when the
project is trusted."""

from __future__ import annotations

from catbuddy.testing.script import Reply

REVIEW = """---
description: Review a file
model: reviewer-model
allowed-tools: Read, Grep
---
Review $1 for bugs. Focus: $ARGUMENTS
"""


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def test_a_custom_command_runs_headless_with_its_arguments(cli, project, scripted_llm):
    (project / ".catbuddy" / "commands").mkdir(parents=True)
    (project / ".catbuddy" / "commands" / "review.md").write_text(REVIEW)
    scripted_llm.push(Reply.text("looks fine"))

    done = cli("run", "--trust-project", "/review calc.py")

    assert done.returncode == 0, done.stderr
    request = scripted_llm.requests[0]
    assert request.messages[-1]["content"].startswith("Review calc.py for bugs. Focus: calc.py")
    assert request.model == "reviewer-model"
    offered = tool_names(request)
    assert "read_file" in offered and "grep" in offered  # Read, Grep: the reading tools
    assert not {"write_file", "edit_file", "exec"} & set(offered)


def test_an_untrusted_project_command_keeps_the_session_model_and_tools(cli, project, scripted_llm):
    (project / ".catbuddy" / "commands").mkdir(parents=True)
    (project / ".catbuddy" / "commands" / "review.md").write_text(REVIEW)
    scripted_llm.push(Reply.text("looks fine"))

    done = cli("run", "/review calc.py")

    assert done.returncode == 0, done.stderr
    request = scripted_llm.requests[0]
    assert request.messages[-1]["content"].startswith("Review calc.py for bugs.")
    assert request.model == "scripted" and "exec" in tool_names(request)
    assert "trusted project" in done.stderr
