"""A 300-turn scripted session in an 8,000-token window: compaction and governance keep every single
request inside the budget from start to end (the server refuses anything over the window)."""

from __future__ import annotations

import itertools

from compaction_helpers import WHOLE, Brain, is_summary_request, summary_requests

from catbuddy.agent.events import ErrorOccurred, TurnEndReason
from catbuddy.config import ModelSpec
from catbuddy.testing.script import Reply

WINDOW, MAX_OUTPUT, MARGIN = 8000, 1000, 1024
TURNS = 300


async def test_300_turns_stay_inside_an_8k_window(scripted_llm_factory, make_loop, workspace):
    (workspace.work_root / "notes.txt").write_text("remember the parser rewrite\n" * 40)
    counter = itertools.count()

    def reply(body: dict) -> object:
        n = next(counter)
        last = body["messages"][-1]
        if last["role"] == "user" and n % 7 == 0:  # now and then a tool round trip
            return Reply.tool_call("read_file", {"path": "notes.txt"}, id=f"call{n}")
        return Reply.text(f"reply {n}: " + "the change is done and tested. " * (n % 13), chunk_size=WHOLE)

    brain = Brain(reply=reply)
    llm = scripted_llm_factory([brain] * (3 * TURNS), context_window=WINDOW)
    loop, events = await make_loop(llm, models={"scripted": ModelSpec(WINDOW, MAX_OUTPUT)})

    for turn in range(TURNS):
        text = f"turn {turn}: " + "please keep improving the parser module " * (1 + turn % 25)
        outcome = await loop.run_turn(text)
        assert outcome.reason is TurnEndReason.DONE, (turn, [e.message for e in events.of(ErrorOccurred)])

    limit = WINDOW - MAX_OUTPUT - MARGIN
    assert not llm.over_budget
    for request in llm.requests:
        tokens = loop.turn_context().counter.count_request(request.messages, request.tools or None)
        assert tokens <= limit, (request.index, tokens, is_summary_request(request.body))
    assert len(summary_requests(llm)) >= 10  # it really compacted, again and again
    assert loop.conversation.history.summary
