"""Tool calls in a turn: parallel read-only calls, results in call order, bad calls answered with errors."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from agent_helpers import assert_valid_request, session_messages

from catbuddy.agent.events import Notice, ToolCallFinished, ToolCallStarted, TurnEnded, TurnEndReason
from catbuddy.safety.kinds import ToolKind
from catbuddy.testing.script import Reply, ToolCallSpec
from catbuddy.tools.base import Tool, ToolContext, ToolResult

SLOW_SECONDS = 0.4


class Lookup(Tool):
    """A read-only tool that takes as long as it is told, and notes the order calls finish in."""

    name: ClassVar[str] = "lookup"
    description: ClassVar[str] = "Look something up."
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "seconds": {"type": "number"}},
        "required": ["key"],
    }
    kind: ClassVar[ToolKind] = ToolKind.READ

    def __init__(self) -> None:
        self.finish_order: list[str] = []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(float(args.get("seconds", 0)))
        self.finish_order.append(args["key"])
        return ToolResult(f"value of {args['key']}")


async def test_two_read_only_calls_run_together_and_keep_call_order(workspace, scripted_llm, make_loop):
    (workspace.work_root / "notes.txt").write_text("alpha\nbeta\n")
    scripted_llm.push(
        Reply.tool_calls(
            ToolCallSpec("grep", {"pattern": "beta"}, id="call_grep"),
            ToolCallSpec("read_file", {"path": "notes.txt"}, id="call_read"),
        ),
        Reply.text("Found it."),
    )
    loop, events = await make_loop(scripted_llm, approval="ask")

    outcome = await loop.run_turn("Where is beta?")

    assert outcome.reason is TurnEndReason.DONE
    results = [m for m in session_messages(loop) if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ["call_grep", "call_read"]
    assert "notes.txt" in results[0]["content"] and "beta" in results[0]["content"]
    assert "alpha" in results[1]["content"]
    assert [e.call_id for e in events.of(ToolCallFinished)] == ["call_grep", "call_read"]
    assert_valid_request(scripted_llm.requests[1].messages)


async def test_a_call_that_finishes_first_still_comes_second(workspace, scripted_llm, make_loop):
    scripted_llm.push(
        Reply.tool_calls(
            ToolCallSpec("lookup", {"key": "slow", "seconds": SLOW_SECONDS}, id="call_slow"),
            ToolCallSpec("lookup", {"key": "fast", "seconds": 0}, id="call_fast"),
        ),
        Reply.text("done"),
    )
    loop, events = await make_loop(scripted_llm)
    lookup = Lookup()
    loop.registry.register(lookup)

    await loop.run_turn("look up both")

    assert lookup.finish_order == ["fast", "slow"]  # they ran together, the second finished first
    sent = scripted_llm.requests[1].messages
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
        ("call_slow", "value of slow"),
        ("call_fast", "value of fast"),
    ]
    assert [e.call_id for e in events.of(ToolCallFinished)] == ["call_slow", "call_fast"]
    assert len(events.of(ToolCallStarted)) == 2


async def test_an_unknown_tool_gets_an_error_result_and_the_turn_goes_on(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("teleport", {"to": "mars"}, id="call_x"), Reply.text("Sorry."))
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("go to mars")

    assert outcome.reason is TurnEndReason.DONE and outcome.text == "Sorry."
    finished = events.of(ToolCallFinished)[0]
    assert finished.is_error
    assert "no tool named 'teleport'" in finished.result and "read_file" in finished.result
    tool_message = scripted_llm.requests[1].messages[-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_x", "content": finished.result}


async def test_invalid_json_arguments_get_an_error_result_and_the_turn_goes_on(
    workspace, scripted_llm, make_loop
):
    scripted_llm.push(
        Reply.tool_call("read_file", '{"path": "a.py"', id="call_bad"),
        Reply.tool_call("read_file", "[1, 2]", id="call_list"),
        Reply.text("I will stop guessing."),
    )
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("read a.py")

    assert outcome.reason is TurnEndReason.DONE
    first, second = events.of(ToolCallFinished)
    assert first.is_error and "not valid JSON" in first.result
    assert second.is_error and "must be a JSON object" in second.result
    for request in scripted_llm.requests:
        assert_valid_request(request.messages)
    assert scripted_llm.requests[2].messages[-1]["tool_call_id"] == "call_list"


async def test_invalid_json_arguments_are_sent_back_as_valid_json_and_kept_raw_where_stored(
    workspace, scripted_llm, make_loop
):
    # Issue 31: the invalid arguments were sent back verbatim in every later request, which strict
    # gateways reject; the raw text stays in the session file and in the result the model reads.
    import json

    raw = '{"path": "a.py"'
    scripted_llm.push(Reply.tool_call("read_file", raw, id="call_bad"), Reply.text("I will stop guessing."))
    loop, events = await make_loop(scripted_llm)

    await loop.run_turn("read a.py")

    sent = scripted_llm.requests[1].messages
    call = next(m for m in sent if m.get("tool_calls"))["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {}
    result = events.of(ToolCallFinished)[0].result
    assert raw in result and sent[-1]["content"] == result
    stored = [entry.message for entry in loop.transcript() if entry.message.get("tool_calls")]
    assert stored[0]["tool_calls"][0]["function"]["arguments"] == raw


async def test_a_tool_error_goes_back_to_the_model_as_a_result(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.tool_call("read_file", {"path": "missing.py"}), Reply.text("It is not there."))
    loop, events = await make_loop(scripted_llm)

    outcome = await loop.run_turn("read missing.py")

    assert outcome.reason is TurnEndReason.DONE
    finished = events.of(ToolCallFinished)[0]
    assert finished.is_error and finished.result.startswith("Error:")
    assert scripted_llm.requests[1].messages[-1]["content"] == finished.result


async def test_the_iteration_cap_ends_a_turn_that_keeps_calling_tools_with_a_notice(
    workspace, scripted_llm, make_loop
):
    (workspace.work_root / "a.txt").write_text("x\n")
    scripted_llm.push(*[Reply.tool_call("read_file", {"path": "a.txt"}) for _ in range(3)])
    loop, events = await make_loop(scripted_llm, max_iterations=3)

    outcome = await loop.run_turn("loop forever")

    assert outcome.reason is TurnEndReason.ITERATION_CAP
    assert events.of(TurnEnded)[-1].reason is TurnEndReason.ITERATION_CAP
    assert any("max_iterations" in n.text for n in events.of(Notice))
    assert len(scripted_llm.requests) == 3
    # The session ends on answered calls, so the next turn's request is valid.
    scripted_llm.push(Reply.text("ok"))
    await loop.run_turn("go on")
    assert_valid_request(scripted_llm.requests[-1].messages)
