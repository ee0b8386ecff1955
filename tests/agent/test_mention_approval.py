"""A mention outside the work root asks first, like a read outside it: allowed, the file is attached;
denied, the mention stays text and nothing of the file is sent."""

from __future__ import annotations

import pytest

from catbuddy.agent.events import ApprovalChoice, ApprovalRequested
from catbuddy.testing.script import Reply


@pytest.mark.parametrize(
    ("choice", "attached"), [(ApprovalChoice.ALLOW_ONCE, True), (ApprovalChoice.DENY, False)]
)
async def test_an_outside_mention_is_attached_only_when_allowed(
    make_loop, scripted_llm, tmp_path_factory, choice, attached
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "notes.txt"
    outside.write_text("the private notes\n")
    scripted_llm.push(Reply.text("ok"))
    loop, _ = await make_loop(scripted_llm, approval="ask")
    asked: list[ApprovalRequested] = []

    def answer(event) -> None:
        if isinstance(event, ApprovalRequested):
            asked.append(event)
            loop.answer_approval(event.call_id, choice)

    loop.add_listener(answer)
    await loop.run_turn(f"summarise @{outside}")

    (request,) = asked
    assert request.name == "mention" and request.arguments == {"path": str(outside.resolve())}
    content = scripted_llm.requests[0].messages[-1]["content"]
    assert ("the private notes" in content) is attached
