"""A headless run stores how each tool call ended beside its result (docs/architecture.md §6): the
session file, `--stream-json`, `catbuddy sessions show` and the app opened with `--continue` all read that,
never the result's text."""

from __future__ import annotations

import json
from pathlib import Path

from catbuddy.config import Settings
from catbuddy.session.store import SessionStore
from catbuddy.testing.script import Reply
from catbuddy.workspace import Workspace, default_home

CALC = "def add(a, b):\n    return a - b\n"
EDIT = {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}


def script(llm) -> None:
    llm.push(
        Reply.tool_call("edit_file", EDIT),
        Reply.tool_call("exec", {"command": "echo 'FAILED test_add'; exit 1"}),
        Reply.tool_call("exec", {"command": "echo '1 passed'"}),
        Reply.tool_call("exec", {"command": "rm -rf ~"}),
        Reply.text("Fixed calc.py."),
    )


def tool_records(project: Path) -> list[dict]:
    [info] = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()
    lines = [json.loads(line) for line in info.path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if line.get("type") == "message" and line.get("role") == "tool"]


def test_every_tool_result_of_a_headless_run_is_stored_with_its_status_exit_code_and_paths(
    cli, scripted_llm, project
):
    (project / "calc.py").write_text(CALC)
    script(scripted_llm)

    result = cli("run", "--stream-json", "fix calc.py")

    assert result.returncode == 0, result.stderr
    records = tool_records(project)
    metas = [record["meta"] for record in records]
    assert [m["status"] for m in metas] == ["ok", "error", "ok", "refused"]
    assert metas[0]["paths"] == [{"path": "calc.py", "change": "modified", "added": 1, "removed": 1}]
    assert [m.get("exit_code") for m in metas] == [None, 1, 0, None]
    assert all("meta" not in record["content"] and isinstance(record["content"], str) for record in records)
    # The provider never gets it: every message it received has the chat fields only.
    for request in scripted_llm.requests:
        assert all(
            set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"} for m in request.messages
        )
    # --stream-json carries exactly what is stored.
    finished = [json.loads(line) for line in result.stdout.splitlines() if '"tool_call_finish"' in line]
    assert [event["meta"] for event in finished] == metas


def test_text_mode_says_how_each_call_ended(cli, scripted_llm, project):
    (project / "calc.py").write_text(CALC)
    script(scripted_llm)

    result = cli("run", "fix calc.py")

    assert result.returncode == 0, result.stderr
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip().startswith(("✓", "✗"))]
    assert [line.split()[:2] for line in lines] == [
        ["✓", "edit_file"],
        ["✗", "exec"],
        ["✓", "exec"],
        ["✗", "exec"],
    ]
    assert "exit 1:" in lines[1] and "refused:" in lines[3]


def test_sessions_show_lists_each_call_with_how_it_ended(cli, scripted_llm, project):
    (project / "calc.py").write_text(CALC)
    script(scripted_llm)
    assert cli("run", "fix calc.py").returncode == 0
    [info] = SessionStore(Workspace.at(project, default_home()).sessions_dir).list()

    text = cli("sessions", "show", info.id)
    data = json.loads(cli("sessions", "show", info.id, "--json").stdout)

    assert text.returncode == 0, text.stderr
    assert "✓ edit_file  calc.py — modified calc.py +1 −1" in text.stdout
    assert "✗ exec  echo 'FAILED test_add'; exit 1 — exit 1" in text.stdout
    assert "✗ exec  rm -rf ~ — refused" in text.stdout
    calls = data["tool_calls"]
    assert [(c["name"], c["status"], c.get("exit_code")) for c in calls] == [
        ("edit_file", "ok", None), ("exec", "error", 1), ("exec", "ok", 0), ("exec", "refused", None),
    ]  # fmt: skip


async def test_the_app_opened_with_continue_shows_the_refused_call_as_failed(cli, scripted_llm, project):
    from catbuddy.tui.app import CatbuddyApp
    from catbuddy.tui.widgets.messages import ToolBlock

    (project / "calc.py").write_text(CALC)
    script(scripted_llm)
    assert cli("run", "fix calc.py").returncode == 0
    settings = Settings(model="scripted", base_url=scripted_llm.base_url, api_key="test", max_retries=0)

    app = CatbuddyApp(Workspace.at(project, default_home()), settings, continue_latest=True)
    async with app.run_test(size=(100, 32)) as pilot:
        for _ in range(100):
            if app.status.info.session_id:
                break
            await pilot.pause(0.05)
        blocks = [(b.status, b.header_text().plain) for b in app.transcript.query(ToolBlock)]

    assert [status for status, _ in blocks] == ["done", "error", "done", "error"]
    assert "✗ refused" in blocks[3][1] and "✗ exit 1" in blocks[1][1]
