"""The plan and plan mode in the app, against the real AgentLoop and the scripted server
(docs/architecture.md §5c): the panel above the input, /plan and Shift+Tab, and a task call that expands
into its subagent's transcript."""

from __future__ import annotations

from helpers import texts, wait_for
from test_e2e import SIZE, idle, real_app, send

from catbuddy.messages import content_text
from catbuddy.testing.script import Reply, ReplySpec, ToolCallSpec
from catbuddy.tui.widgets.messages import NoticeBlock, ToolBlock
from catbuddy.tui.widgets.plan_panel import PlanPanel

PLAN = {"plan": [{"step": "Read the parser", "status": "done"}, {"step": "Fix the bug", "status": "in_progress"},
                 {"step": "Run the tests", "status": "pending"}]}  # fmt: skip


async def test_the_panel_shows_the_plan_with_the_current_step_and_folds(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.tool_call("update_plan", PLAN), Reply.text("working on it"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "fix the parser")
        await wait_for(pilot, lambda: idle(app) and app.query_one(PlanPanel).steps, what="plan")
        panel = app.query_one(PlanPanel)
        shown = panel.render_plan()
        assert panel.display and "Plan 1/3 done" in shown.plain and "▶ Fix the bug" in shown.plain
        current = next(span for span in shown.spans if shown.plain[span.start : span.end] == "Fix the bug")
        assert "bold" in str(current.style)  # the step in progress stands out
        await pilot.press("ctrl+t")
        assert panel.render_plan().plain == "▸ Plan 1/3 done · now: Fix the bug"


async def test_shift_tab_cycles_into_plan_mode_and_accepting_the_plan_carries_it_out(
    workspace, scripted_llm
) -> None:
    scripted_llm.push(
        Reply.tool_call("update_plan", PLAN), Reply.text("Here is my plan."), Reply.text("Doing it.")
    )
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.loop, what="loop start")
        await pilot.press("shift+tab")  # ask → auto-edit
        await pilot.press("shift+tab")  # → plan mode
        assert app.loop.plan_mode and app.status.info.plan_mode
        assert "PLAN MODE" in app.status.render().plain
        await send(app, pilot, "how would you fix it?")
        await wait_for(
            pilot, lambda: any("Plan ready" in t for t in texts(app, NoticeBlock)), what="plan ready"
        )
        await send(app, pilot, "/plan accept")
        await wait_for(pilot, lambda: idle(app) and len(scripted_llm.requests) == 3, what="carried out")
        assert not app.loop.plan_mode and not app.status.info.plan_mode
    first, last = scripted_llm.requests[0], scripted_llm.requests[-1]
    assert "write_file" not in {t["function"]["name"] for t in first.body["tools"]}
    assert "write_file" in {t["function"]["name"] for t in last.body["tools"]}
    assert content_text(last.messages[-1]["content"]).startswith("The plan is accepted")


async def test_a_task_call_expands_into_its_subagents_transcript(workspace, scripted_llm) -> None:
    (workspace.work_root / "notes.txt").write_text("NOTE-BODY\n")

    def answer(body):
        if "## Agent: explore" not in content_text(body["messages"][0]["content"]):
            return parent.pop(0) if parent else Reply.text("done")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply.tool_call("read_file", {"path": "notes.txt"})
        return Reply.text("notes.txt holds NOTE-BODY.")

    parent = [
        ReplySpec(
            tool_calls=(
                ToolCallSpec("task", {"description": "read notes", "prompt": "What is in notes.txt?"}),
            )
        )
    ]
    scripted_llm.push(*[answer] * 6)
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "delegate it")
        await wait_for(pilot, lambda: idle(app) and app.transcript.query(ToolBlock), what="task call")
        block = app.transcript.query_one(ToolBlock)
        assert block.tool_name == "task" and block.result == "notes.txt holds NOTE-BODY."
        assert "transcript of subagent explore" in block.display_text
        assert "assistant: → read_file" in block.display_text and "NOTE-BODY" in block.display_text


async def test_a_resumed_session_shows_its_plan_and_its_task_calls_transcript(
    workspace, scripted_llm
) -> None:
    def answer(body):
        if "## Agent: explore" in content_text(body["messages"][0]["content"]):
            return Reply.text("found it in a.py")
        return parent.pop(0) if parent else Reply.text("done")

    task = ToolCallSpec("task", {"description": "look", "prompt": "Find it."})
    parent = [Reply.tool_call("update_plan", PLAN), ReplySpec(tool_calls=(task,))]
    scripted_llm.push(*[answer] * 6)
    first = real_app(workspace, scripted_llm)
    async with first.run_test(size=SIZE) as pilot:
        await send(first, pilot, "go")
        await wait_for(
            pilot, lambda: idle(first) and len(first.transcript.query(ToolBlock)) == 2, what="calls"
        )
        session_id = first.loop.session_id

    again = real_app(workspace, scripted_llm, resume=session_id)
    async with again.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot,
            lambda: idle(again) and again.session_id and again.transcript.query(ToolBlock),
            what="resumed",
        )
        assert "▶ Fix the bug" in again.query_one(PlanPanel).render_plan().plain
        task_block = [b for b in again.transcript.query(ToolBlock) if b.tool_name == "task"][0]
        assert "transcript of subagent explore" in task_block.display_text
        assert "assistant: found it in a.py" in task_block.display_text
        assert "user: Find it.\n" in task_block.display_text  # the runtime block is not shown


async def test_context_shows_the_plan(workspace, scripted_llm) -> None:
    from catbuddy.tui.screens.context import ContextScreen

    scripted_llm.push(Reply.tool_call("update_plan", PLAN), Reply.text("ok"))
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "plan")
        await wait_for(pilot, lambda: idle(app) and app.query_one(PlanPanel).steps, what="plan")
        await send(app, pilot, "/context")
        screen = await wait_for(
            pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen, what="/context"
        )
        assert "=== Plan (set 1 time" in screen.delegation and "2. [>] Fix the bug" in screen.delegation


async def test_a_running_task_call_shows_what_its_subagent_is_doing(workspace, scripted_llm) -> None:
    (workspace.work_root / "notes.txt").write_text("x\n")

    def answer(body):
        if "## Agent: explore" not in content_text(body["messages"][0]["content"]):
            return parent.pop(0) if parent else Reply.text("done")
        if not any(m["role"] == "tool" for m in body["messages"]):
            return Reply.tool_call("read_file", {"path": "notes.txt"})
        return Reply.text("slow answer " * 20, chunk_size=4, delay=0.05)

    parent = [
        ReplySpec(tool_calls=(ToolCallSpec("task", {"description": "read", "prompt": "Read notes.txt."}),))
    ]
    scripted_llm.push(*[answer] * 6)
    app = real_app(workspace, scripted_llm)
    async with app.run_test(size=SIZE) as pilot:
        await send(app, pilot, "delegate")
        block = await wait_for(
            pilot, lambda: [b for b in app.transcript.query(ToolBlock) if b.progress], what="progress"
        )
        assert (
            block[0].progress == "read_file notes.txt"
            and "· read_file notes.txt" in block[0].header_text().plain
        )
        await wait_for(pilot, lambda: idle(app), timeout=15, what="idle")
        assert "read_file" not in block[0].header_text().plain  # finished: the line says how it ended
