"""What a front end may use of the agent loop: the one seam between the engine and the TUI or CLI.

``AgentLoop`` implements it; the TUI's tests drive a stand-in that does too. Front ends read state and
receive events; they act only through these methods (docs/architecture.md §5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: importing this seam must not pull in the engine (TUI start-up)
    from catbuddy.agent.bus import Listener
    from catbuddy.agent.events import (
        ApprovalChoice,
        CompactionFinished,
        CompactionUndone,
        ContextStatus,
        DreamChoice,
        LoopState,
    )
    from catbuddy.context.governance.report import ContextReport
    from catbuddy.memory.dream import DreamResult
    from catbuddy.session.history import HistoryEntry
    from catbuddy.session.store import SessionInfo


@runtime_checkable
class Agent(Protocol):
    queued: list[str]

    @property
    def state(self) -> LoopState: ...

    @property
    def session_id(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def approval_mode(self) -> str: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def warm_up(self) -> None: ...

    def add_listener(self, listener: Listener) -> None: ...

    def remove_listener(self, listener: Listener) -> None: ...

    def submit(self, text: str) -> None: ...

    async def stop(self) -> None: ...

    async def compact(self, instructions: str | None = None) -> CompactionFinished: ...

    async def undo_compaction(self) -> CompactionUndone: ...

    def answer_approval(
        self, call_id: str, choice: ApprovalChoice | str, note: str = "", pattern: str = ""
    ) -> bool: ...

    async def dream(self, *, dry_run: bool = False) -> DreamResult: ...

    def answer_dream(self, proposal_id: str, choice: DreamChoice | str) -> bool: ...

    def memory_status(self) -> dict[str, Any]: ...

    def set_model(self, model: str) -> None: ...

    def set_approval_mode(self, mode: str) -> None: ...

    def transcript(self) -> list[HistoryEntry]: ...

    def context_report(self) -> ContextReport: ...

    def context_status(self) -> ContextStatus: ...

    def list_sessions(self) -> list[SessionInfo]: ...

    async def new_session(self) -> None: ...

    async def resume(self, session_id: str) -> None: ...
