"""The plan and subagents from the command line (docs/architecture.md §5c): `catbuddy agents` lists agents
and the files it could not use, `--stream-json` carries plan events, and `catbuddy context --session` and
`catbuddy sessions show` show the plan and, per subagent call, the tokens it read against those it returned."""

from __future__ import annotations

import json

from catbuddy.messages import content_text
from catbuddy.testing.script import Reply, ReplySpec, ToolCallSpec

PLAN = {
    "plan": [
        {"step": "Find the loader", "status": "in_progress"},
        {"step": "Explain it", "status": "pending"},
    ]
}


def test_agents_lists_shipped_and_project_agents_and_reports_a_bad_file(cli, project):
    folder = project / ".catbuddy" / "agents"
    folder.mkdir(parents=True)
    (folder / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews a diff.\nmax_turns: 5\n---\nReview.\n"
    )
    (folder / "broken.md").write_text("---\nname: Broken Name\ndescription: x\n---\nbody\n")
    (folder / "nofront.md").write_text("just text\n")

    result = cli("agents")

    assert result.returncode == 0, result.stderr
    assert "explore  [shipped]" in result.stdout and "reviewer  [project]  Reviews a diff." in result.stdout
    assert "max 5 turns" in result.stdout
    assert "broken.md: 'name' must be lower-case" in result.stdout
    assert "nofront.md: no frontmatter" in result.stdout


def session_id(stream: str) -> str:
    return next(json.loads(line)["session_id"] for line in stream.splitlines() if '"kind": "session"' in line)


def test_context_and_sessions_show_report_the_plan_and_each_subagent_call(cli, scripted_llm, project):
    (project / "loader.py").write_text("def load():\n    return read('config.toml')\n" * 40)

    def answer(body):
        system = content_text(body["messages"][0]["content"])
        if "## Agent: explore" not in system:
            return parent.pop(0) if parent else Reply.text("All done.")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply.tool_call("read_file", {"path": "loader.py"})
        return Reply.text("loader.py:2 reads config.toml.")

    parent = [
        Reply.tool_call("update_plan", PLAN),
        ReplySpec(
            tool_calls=(
                ToolCallSpec("task", {"description": "find loader", "prompt": "Where is config read?"}),
            )
        ),
    ]
    scripted_llm.push(*[answer] * 10)

    run = cli("run", "--stream-json", "explain the config loading")

    assert run.returncode == 0, run.stderr
    kinds = [json.loads(line)["kind"] for line in run.stdout.splitlines()]
    assert "plan" in kinds and "subagent_start" in kinds and "subagent" in kinds
    sid = session_id(run.stdout)

    text = cli("context", "--session", sid, "--no-mcp")
    assert text.returncode == 0, text.stderr
    assert "=== Plan (set 1 time" in text.stdout and "1. [>] Find the loader" in text.stdout
    assert "=== Subagent calls (1:" in text.stdout and "explore: find loader · done" in text.stdout

    data = json.loads(cli("context", "--session", sid, "--no-mcp", "--json").stdout)
    (call,) = data["subagents"]
    assert call["status"] == "done" and 0 < call["returned_tokens"] < call["spent_tokens"]
    assert data["plan"]["steps"][0] == {"step": "Find the loader", "status": "in_progress"}

    shown = cli("sessions", "show", sid)
    assert shown.returncode == 0, shown.stderr
    tool_line = next(line for line in shown.stdout.splitlines() if line.startswith("    tool: "))
    assert "def load():" in tool_line  # the child's transcript, under its call
    assert "    assistant: loader.py:2 reads config.toml." in shown.stdout


def test_run_plan_refuses_a_write(cli, scripted_llm, project):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": "x.txt", "content": "x"}), Reply.text("The plan: …")
    )

    run = cli("run", "--plan", "--stream-json", "plan the change")

    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert {"plan_mode"} <= {e["kind"] for e in events}
    (finished,) = [e for e in events if e["kind"] == "tool_call_finish"]
    assert finished["meta"]["status"] == "refused" and not (project / "x.txt").exists()
    offered = {t["function"]["name"] for t in scripted_llm.requests[0].body["tools"]}
    assert "write_file" not in offered and "edit_file" not in offered
