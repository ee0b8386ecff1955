"""Plan mode (docs/architecture.md §5c): only reading tools are offered and allowed, the model is told it
is planning, a write call is refused in every approval mode, and accepting the plan leaves plan mode with
the plan kept."""

from __future__ import annotations

import asyncio
import io
import json

from catbuddy.agent.events import PlanModeChanged, ToolCallFinished
from catbuddy.cli_commands.headless import run_headless
from catbuddy.messages import content_text
from catbuddy.testing.script import Reply

WRITING = {"write_file", "edit_file"}


def offered(request) -> set[str]:
    return {tool["function"]["name"] for tool in request.body.get("tools") or []}


async def test_plan_mode_offers_no_writing_tool_and_tells_the_model_it_is_planning(
    scripted_llm_factory, make_loop
):
    llm = scripted_llm_factory([Reply.text("Here is the plan.")])
    loop, events = await make_loop(llm, approval="yolo")
    loop.set_plan_mode(True)

    await asyncio.wait_for(loop.run_turn("how would you fix the parser?"), 20)

    tools = offered(llm.requests[0])
    assert not tools & WRITING
    assert {"read_file", "grep", "list_dir", "update_plan", "task", "exec"} <= tools
    system = content_text(llm.requests[0].messages[0]["content"])
    assert "## Plan mode" in system and "end your reply with the plan" in system
    assert events.of(PlanModeChanged)[0].active is True


async def test_a_write_call_in_plan_mode_is_refused_even_in_yolo(workspace, scripted_llm_factory, make_loop):
    llm = scripted_llm_factory(
        [
            Reply.tool_call("write_file", {"path": "new.txt", "content": "x"}),
            Reply.tool_call("exec", {"command": "touch made.txt"}),
            Reply.text("ok, planning only"),
        ]
    )
    loop, events = await make_loop(llm, approval="yolo")
    loop.set_plan_mode(True)

    await asyncio.wait_for(loop.run_turn("write it"), 20)

    write, command = events.of(ToolCallFinished)
    assert write.is_error and write.meta["status"] == "refused"
    assert "plan mode is on" in write.result and "write_file would change something" in write.result
    assert command.is_error and "plan mode is on" in command.result and "`touch made.txt`" in command.result
    assert not (workspace.work_root / "new.txt").exists() and not (workspace.work_root / "made.txt").exists()


async def test_known_read_only_commands_run_in_plan_mode_even_in_ask(
    workspace, scripted_llm_factory, make_loop
):
    (workspace.work_root / "a.txt").write_text("alpha\n")
    llm = scripted_llm_factory(
        [
            Reply.tool_call("exec", {"command": "cat a.txt | wc -l"}),
            Reply.tool_call("exec", {"command": "rm a.txt"}),
            Reply.text("read it"),
        ]  # fmt: skip
    )
    loop, events = await make_loop(llm, approval="ask", interactive=False)
    loop.set_plan_mode(True)

    await asyncio.wait_for(loop.run_turn("count the lines"), 30)

    read, remove = events.of(ToolCallFinished)
    assert not read.is_error and read.result.strip().startswith("1")
    assert remove.is_error and "plan mode is on" in remove.result
    assert (workspace.work_root / "a.txt").exists()


async def test_accepting_the_plan_leaves_plan_mode_and_keeps_the_plan(scripted_llm_factory, make_loop):
    plan = {
        "plan": [{"step": "Edit the parser", "status": "pending"}, {"step": "Run tests", "status": "pending"}]
    }
    llm = scripted_llm_factory(
        [Reply.tool_call("update_plan", plan), Reply.text("Plan ready."), Reply.text("Doing it.")]
    )
    loop, events = await make_loop(llm)
    loop.set_plan_mode(True)
    await asyncio.wait_for(loop.run_turn("plan it"), 20)

    kept = loop.accept_plan()
    await asyncio.wait_for(loop.run_turn("go ahead"), 20)

    assert kept is not None and kept.render() == loop.current_plan().render()
    assert not loop.plan_mode and [e.active for e in events.of(PlanModeChanged)] == [True, False]
    assert offered(llm.requests[-1]) >= WRITING
    assert "## Plan mode" not in content_text(llm.requests[-1].messages[0]["content"])


async def test_headless_plan_flag_runs_in_plan_mode(workspace, scripted_llm_factory):
    llm = scripted_llm_factory(
        [Reply.tool_call("write_file", {"path": "x.txt", "content": "x"}), Reply.text("plan")]
    )
    out = io.StringIO()

    code = await run_headless(
        workspace, llm.settings(approval="yolo"), "plan it", fmt="stream-json", plan_mode=True, out=out,
        err=io.StringIO(),
    )  # fmt: skip

    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == 0
    assert {"kind": "plan_mode", "active": True} in [
        {k: e[k] for k in ("kind", "active")} for e in events if e["kind"] == "plan_mode"
    ]
    refused = [e for e in events if e["kind"] == "tool_call_finish"][0]
    assert refused["is_error"] and "plan mode is on" in refused["result"]
    assert not (workspace.work_root / "x.txt").exists() and not offered(llm.requests[0]) & WRITING


async def test_the_json_result_carries_the_plan_the_run_left(workspace, scripted_llm_factory):
    plan = {"plan": [{"step": "Edit the parser", "status": "pending"}]}
    llm = scripted_llm_factory([Reply.tool_call("update_plan", plan), Reply.text("planned")])
    out = io.StringIO()

    await run_headless(
        workspace, llm.settings(), "plan", fmt="json", plan_mode=True, out=out, err=io.StringIO()
    )

    assert json.loads(out.getvalue())["plan"] == [{"step": "Edit the parser", "status": "pending"}]
