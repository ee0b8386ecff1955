"""Pending approvals: the runner waits on a call id, a front end answers it through the loop.

Answers never travel inside events (events are plain data): ``AgentLoop.answer_approval`` hands the
decision to the broker, which wakes the runner waiting on that call.
"""

from __future__ import annotations

import asyncio

from catbuddy.agent.events import ApprovalChoice, ApprovalDecision


class ApprovalBroker:
    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[ApprovalDecision]] = {}

    def pending(self) -> list[str]:
        return list(self._pending)

    def expect(self, call_id: str) -> asyncio.Future[ApprovalDecision]:
        """Register ``call_id`` before the request is announced: a front end may answer at once."""
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()
        self._pending[call_id] = future
        return future

    async def wait(self, call_id: str) -> ApprovalDecision:
        """The answer to an expected ``call_id``; cancelling the wait forgets the request."""
        future = self._pending.get(call_id) or self.expect(call_id)
        try:
            return await future
        finally:
            self._pending.pop(call_id, None)

    def answer(self, call_id: str, decision: ApprovalDecision) -> bool:
        """False when nothing waits on ``call_id`` (answered already, or never asked)."""
        future = self._pending.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True

    def deny_all(self) -> None:
        for call_id in self.pending():
            self.answer(call_id, ApprovalDecision(ApprovalChoice.DENY))
