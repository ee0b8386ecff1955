"""catbuddy's own files through the whole loop: each write asks, a yes lets that one call through."""

from __future__ import annotations

from catbuddy.agent.events import ApprovalChoice, ApprovalRequested, ToolCallFinished
from catbuddy.testing.script import Reply

CONFIG = ".catbuddy/config.toml"


def answering(loop, choice: ApprovalChoice, asked: list):
    def listener(event: object) -> None:
        if isinstance(event, ApprovalRequested):
            asked.append(event)
            loop.answer_approval(event.call_id, choice, "", "")

    return listener


async def test_an_approved_write_to_the_project_config_happens_once(workspace, scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": CONFIG, "content": 'approval = "yolo"\n'}),
        Reply.tool_call("write_file", {"path": CONFIG, "content": 'approval = "ask"\n'}),
        Reply.text("done"),
    )
    loop, events = await make_loop(scripted_llm, approval="yolo")
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.ALLOW_ONCE, asked)

    await loop.run_turn("change the config twice")

    assert len(asked) == 2  # asked every time, even in yolo
    assert all(request.suggested_pattern == "" for request in asked)  # never remembered
    assert (workspace.work_root / CONFIG).read_text() == 'approval = "ask"\n'
    assert not any(finished.is_error for finished in events.of(ToolCallFinished))


async def test_allow_for_the_session_does_not_open_the_config_for_later_writes(workspace, scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_call("write_file", {"path": CONFIG, "content": "a = 1\n"}),
        Reply.tool_call("write_file", {"path": CONFIG, "content": "a = 2\n"}),
        Reply.text("done"),
    )
    loop, events = await make_loop(scripted_llm, approval="yolo")
    asked: list[ApprovalRequested] = []
    events.on = answering(loop, ApprovalChoice.ALLOW_SESSION, asked)

    await loop.run_turn("write the config")

    assert len(asked) == 2


async def test_headless_a_config_write_is_refused_with_the_reason(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("write_file", {"path": CONFIG, "content": "x = 1\n"}), Reply.text("ok"))
    loop, events = await make_loop(scripted_llm, approval="yolo", interactive=False, channel="headless")

    await loop.run_turn("write the config")

    assert not (workspace.work_root / CONFIG).exists()
    [finished] = events.of(ToolCallFinished)
    assert finished.is_error and "--approval yolo" not in finished.result
