"""/undo, /redo, /rewind and /fork in the app (a mixin of the slash commands; docs/architecture.md §15).

Before files change, the app shows which ones will and asks; a file the user changed since the turn is
marked, and the user chooses to overwrite it, keep it, or cancel.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.app import App

from catbuddy.agent.api import Agent
from catbuddy.messages import content_text

if TYPE_CHECKING:
    from catbuddy.checkpoints.manager import Restore

PREVIEW_WIDTH = 60  # characters of a user message in the /rewind picker
APPLY, OVERWRITE, KEEP, CANCEL = "apply", "overwrite", "keep", "cancel"
BOTH, CONVERSATION, FILES = "both", "conversation", "files"


class UndoCommands(App[str | None]):
    if TYPE_CHECKING:
        loop: Agent | None

        @property
        def agent(self) -> Agent: ...
        def notice(self, text: str, level: str = "info") -> None: ...
        def running(self) -> bool: ...
        def refresh_context(self) -> None: ...
        async def show_session(self) -> None: ...

    def _idle(self, what: str) -> bool:
        if self.running():
            self.notice(f"A turn is running: wait for it, or press Esc, then {what}.", "warning")
            return False
        return True

    async def _pick(self, title: str, choices: list[tuple[str, str]]) -> str | None:
        from catbuddy.tui.screens.choice import ChoicePicker

        previous = getattr(self, "_undo_picker", None)
        while previous is not None and previous.is_attached:  # the previous question is still closing
            await asyncio.sleep(0.01)
        picker = self._undo_picker = ChoicePicker(title, choices, None)
        return await self.push_screen_wait(picker)

    async def _confirm_restore(self, restore: Restore, verb: str) -> str | None:
        """APPLY / OVERWRITE / KEEP, or None to cancel, after showing the files."""
        listed = "\n".join(
            f"  {p}{'  ← changed since the turn' if p in restore.conflicts else ''}" for p in restore.paths
        )
        self.notice(f"{verb} would restore {len(restore.paths)} file(s):\n{listed}", "info")
        if restore.conflicts:
            choices = [
                (OVERWRITE, f"restore all, overwriting {len(restore.conflicts)} changed since"),
                (KEEP, "restore the others, keep the ones changed since"),
                (CANCEL, "change nothing"),
            ]
        else:
            choices = [(APPLY, f"restore {len(restore.paths)} file(s)"), (CANCEL, "change nothing")]
        picked = await self._pick(f"{verb}?", choices)
        return None if picked in (None, CANCEL) else picked

    async def _restore(self, restore: Restore, action: str, choice: str) -> None:
        paths = await self.agent.restore_files(restore, action, overwrite=choice == OVERWRITE)
        kept = [p for p in restore.conflicts if p not in paths]
        note = f"; kept as you changed them: {', '.join(kept)}" if kept else ""
        self.notice(f"↶ {action}: restored {len(paths)} file(s){note}.", "success")

    async def slash_undo(self, argument: str) -> None:
        if self._idle("/undo"):
            self.run_worker(self._undo_or_redo("undo"), group="undo")

    async def slash_redo(self, argument: str) -> None:
        if self._idle("/redo"):
            self.run_worker(self._undo_or_redo("redo"), group="undo")

    async def _undo_or_redo(self, action: str) -> None:
        try:
            restore = await self.agent.plan_restore(action)
        except Exception as exc:  # a broken shadow repository: say so, change nothing
            self.notice(f"Cannot {action}: {exc}", "error")
            return
        if restore is None:
            self.notice(
                f"Nothing to {action}: no turn of this session {'was undone' if action == 'redo' else 'changed files'}."
            )
            return
        choice = await self._confirm_restore(restore, f"/{action} of turn {restore.turns[0].id}")
        if choice is not None:
            await self._restore(restore, action, choice)

    async def slash_rewind(self, argument: str) -> None:
        if self._idle("/rewind"):
            self.run_worker(self._rewind(argument.strip()), group="undo")

    async def _rewind(self, message_id: str) -> None:
        users = [e for e in self.agent.transcript() if e.message.get("role") == "user"]
        if not users:
            self.notice("Nothing to rewind: this session has no messages yet.")
            return
        if not message_id:
            choices = [(e.id, _preview(e.message)) for e in reversed(users)]
            picked = await self._pick("Rewind to just before which message?", choices)
            if picked is None:
                return
            message_id = picked
        elif message_id not in {e.id for e in users}:
            self.notice(f"{message_id} is not a user message of this session.", "warning")
            return
        what = await self._pick(
            "Restore what?",
            [(BOTH, "the conversation and the files"), (CONVERSATION, "the conversation only"),
             (FILES, "the files only")],
        )  # fmt: skip
        if what is None:
            return
        if what in (BOTH, FILES):
            restore = await self.agent.plan_restore("rewind", message_id)
            if restore is not None and restore.paths:
                choice = await self._confirm_restore(restore, f"/rewind to before {message_id}")
                if choice is None:
                    return
                await self._restore(restore, "rewind", choice)
            else:
                self.notice("No file changes to take back after that message.")
        if what in (BOTH, CONVERSATION):
            left = await self.agent.rewind_conversation(message_id)
            await self.show_session()
            self.refresh_context()
            self.notice(f"↶ The conversation now ends just before {message_id} ({left} messages).", "success")

    async def slash_fork(self, argument: str) -> None:
        if not self._idle("/fork"):
            return
        at = argument.strip() or None
        try:
            new_id = await self.agent.fork(at)
        except Exception as exc:  # an unknown message id
            self.notice(f"Cannot fork: {exc}", "error")
            return
        self.notice(f"Forked into session {new_id}. /resume {new_id} to continue there.", "success")


def _preview(message: dict[str, Any]) -> str:
    text = " ".join(content_text(message.get("content")).split())
    return text if len(text) <= PREVIEW_WIDTH else text[: PREVIEW_WIDTH - 1] + "…"
