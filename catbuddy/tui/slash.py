"""What each slash command does in the app (a mixin of CatbuddyApp; the table lives in widgets/slash_table.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from textual.app import App

from catbuddy.agent.api import Agent
from catbuddy.config import APPROVAL_MODES
from catbuddy.messages import content_text
from catbuddy.tui.lazy import lazy_module
from catbuddy.tui.widgets import slash_table
from catbuddy.workspace import shipped_default

if TYPE_CHECKING:
    from catbuddy.agent import events as ev
    from catbuddy.memory.saving import VersionedSaver
    from catbuddy.session.history import HistoryEntry
    from catbuddy.tui.screens.editor import EditableFile
else:
    ev = lazy_module("catbuddy.agent.events")

# The screens and the memory modules are imported by the command that opens them, not before the
# app's first frame (docs/architecture.md §10).

APPROVAL_DESCRIPTIONS = {
    "ask": "edits and commands ask first (read-only commands run while sandboxed)",
    "auto-edit": "edits and read-only commands allowed, other commands ask",
    "yolo": "nothing asks (deny rules still apply)",
}
COPY_FALLBACK_NAME = "last_reply.md"  # under the catbuddy home, for terminals without OSC 52

HELP_KEYS = """Keys: Enter send · Shift+Enter / Ctrl+J newline · Up/Down history · Tab complete
      Esc stop the turn (again: clear input) · Ctrl+C twice exit · click a tool call to expand it
      Typing while the agent works queues your message for after the turn."""


class SlashCommands(App[str | None]):
    """Needs from the app: the loop, the workspace and settings, and the helpers declared below."""

    if TYPE_CHECKING:
        from catbuddy.config import Settings
        from catbuddy.tui.widgets.prompt import PromptArea
        from catbuddy.tui.widgets.status import StatusBar
        from catbuddy.workspace import Workspace

        loop: Agent | None
        workspace: Workspace
        settings: Settings

        @property
        def prompt(self) -> PromptArea: ...
        @property
        def status(self) -> StatusBar: ...
        def notice(self, text: str, level: str = "info") -> None: ...
        def running(self) -> bool: ...
        def action_stop(self) -> None: ...
        def refresh_context(self) -> None: ...
        async def quit(self) -> None: ...
        async def show_session(self) -> None: ...

    @property
    def agent(self) -> Agent:
        """The loop, for commands that run only once it has started (``run_slash`` checks)."""
        assert self.loop is not None, "slash commands other than /help and /exit wait for the loop"
        return self.loop

    async def run_slash(self, text: str) -> bool:
        """Run `text` if it is a slash command; False when it is a message for the model."""
        parsed = slash_table.parse(text)
        if parsed is None:
            return False
        handler = getattr(self, f"slash_{parsed.name}", None)
        if handler is None or parsed.name not in slash_table.BY_NAME:
            self.notice(slash_table.unknown_message(parsed.name), "warning")
            return True
        if self.loop is None and parsed.name not in ("help", "exit"):
            self.notice("Still starting up; try again in a moment.", "warning")
            return True
        await handler(parsed.argument)
        return True

    async def slash_help(self, argument: str) -> None:
        width = max(len(f"/{c.name} {c.usage}") for c in slash_table.COMMANDS)
        lines = [f"/{c.name} {c.usage}".ljust(width) + f"  {c.description}" for c in slash_table.COMMANDS]
        self.notice("\n".join(lines) + "\n\n" + HELP_KEYS, "info")

    async def slash_stop(self, argument: str) -> None:
        if self.running():
            self.action_stop()
        else:
            self.notice("Nothing is running.", "info")

    async def slash_exit(self, argument: str) -> None:
        await self.quit()

    async def slash_new(self, argument: str) -> None:
        if self.running():
            await self.agent.stop()
        await self.agent.new_session()
        await self.show_session()
        self.notice(f"New session {self.agent.session_id}", "success")

    async def slash_compact(self, argument: str) -> None:
        undo = argument.strip().lower() == "undo"
        if self.agent.state is not ev.LoopState.IDLE:
            what = "/compact undo" if undo else "/compact"
            self.notice(f"A turn is running: wait for it, or press Esc, then {what}.", "warning")
            return
        if undo:
            self.run_worker(self._undo_compaction(), group="compact")
            return
        self.notice("Compacting…" + (f" (keeping: {argument})" if argument else ""), "info")
        self.run_worker(self.agent.compact(argument or None), group="compact")

    async def _undo_compaction(self) -> None:
        result = await self.agent.undo_compaction()
        self.notice(
            f"↶ {result.message}" if result.ok else result.message, "success" if result.ok else "warning"
        )
        if result.ok:
            self.refresh_context()

    async def slash_context(self, argument: str) -> None:
        from catbuddy.memory.status import format_status
        from catbuddy.tui.screens.context import ContextScreen

        try:
            memory = format_status(self.agent.memory_status())
        except Exception as exc:  # an unreadable memory folder must not hide the context
            memory = f"memory: cannot read its state ({exc})"
        await self.push_screen(ContextScreen(self.agent.context_report(), memory))

    def _editable(self, name: str) -> EditableFile:
        from catbuddy.tui.screens.editor import EditableFile

        path = self.workspace.editable_path(name, self.settings.context.global_user_profile)
        text = path.read_text(encoding="utf-8") if path.is_file() else shipped_default(name)
        return EditableFile(name, path, text)

    def _editor_closed(self, saved: bool | None) -> None:
        if saved:
            self.notice("Saved. The next turn's prompt includes the change.", "success")
            self.refresh_context()
        self.prompt.focus()

    async def slash_edit(self, argument: str) -> None:
        name = slash_table.resolve_editable(argument)
        if name is None:
            choices = ", ".join(slash_table.EDITABLE_FILES)
            shown = f"`{argument}` is not" if argument else "Name"
            self.notice(f"{shown} a workspace file to edit: /edit one of {choices}", "warning")
            return
        from catbuddy.tui.screens.editor import EditorScreen

        file = self._editable(name)
        await self.push_screen(
            EditorScreen([file], f"Edit {file.path}", self._saver()), callback=self._editor_closed
        )

    def _saver(self) -> VersionedSaver:
        """Saves that version a MEMORY.md first (docs/architecture.md §13)."""
        from catbuddy.memory.paths import MemoryPaths
        from catbuddy.memory.saving import VersionedSaver

        return VersionedSaver(MemoryPaths.of(self.workspace), lambda: self.agent.session_id)

    async def slash_memory(self, argument: str) -> None:
        command, _, rest = argument.partition(" ")
        if command:
            await self._memory_command(command.lower(), rest.strip())
            return
        from catbuddy.tui.screens.editor import EditableFile, EditorScreen

        project = self.workspace.project_memory
        global_ = self.workspace.global_memory
        files = [
            EditableFile(
                "Project MEMORY.md",
                project,
                project.read_text(encoding="utf-8") if project.is_file() else shipped_default("MEMORY.md"),
            ),
            EditableFile(
                "Global MEMORY.md",
                global_,
                global_.read_text(encoding="utf-8") if global_.is_file() else shipped_default("MEMORY.md"),
            ),
        ]
        await self.push_screen(
            EditorScreen(files, "Memory (both files reach the prompt)", self._saver()),
            callback=self._editor_closed,
        )

    async def _memory_command(self, command: str, rest: str) -> None:
        from catbuddy.memory import log_view
        from catbuddy.memory.versions import VersionError
        from catbuddy.tui.screens.memory import MemoryView

        prefix = log_view.APP_PREFIX
        try:
            if command == "log":
                text = await asyncio.to_thread(log_view.format_log, self.workspace, None, prefix)
                await self.push_screen(MemoryView("Memory changes, newest first", text))
            elif command == "diff":
                if rest and not rest.lstrip("#").isdigit():
                    self.notice(
                        f"`{rest}` is not a change number: /memory diff [N] (see /memory log)", "warning"
                    )
                    return
                number = int(rest.lstrip("#")) if rest else None
                text = await asyncio.to_thread(log_view.format_diff, self.workspace, number)
                await self.push_screen(MemoryView(f"Memory change {rest or '(newest)'}", text))
            elif command == "undo":
                sessions = (self.agent.session_id,) if self.agent.session_id else ()
                text = await asyncio.to_thread(log_view.undo_last, self.workspace, prefix, sessions)
                self.notice(text, "success")
                self.refresh_context()
            else:
                self.notice(
                    f"/memory {command}: unknown. Use /memory (edit), /memory log, /memory diff [N], /memory undo",
                    "warning",
                )
        except VersionError as exc:
            self.notice(str(exc), "warning")
        except OSError as exc:
            self.notice(f"Memory versions are unreadable: {exc}", "error")

    async def slash_dream(self, argument: str) -> None:
        dry_run = argument.strip().lstrip("-").lower() in ("dry-run", "dry", "n")
        if argument and not dry_run:
            self.notice("Usage: /dream, or /dream --dry-run to see the diff without writing", "warning")
            return
        self.notice(
            "Dreaming over the pending memory entries… keep working; changes land between turns.", "info"
        )
        self.run_worker(self._dream(dry_run), group="dream")

    async def _dream(self, dry_run: bool) -> None:
        from catbuddy.tui.screens.memory import MemoryView

        result = await self.agent.dream(dry_run=dry_run)
        if dry_run and result.diff:
            await self.push_screen(
                MemoryView(f"Dream would change memory {result.counts} (dry run)", result.diff)
            )
        elif dry_run:
            self.notice(f"memory: {result.message}", "info")
        self.refresh_context()

    async def ask_dream(self, proposal: ev.DreamProposed) -> None:
        """``memory.dream = "ask"``: show the diff; the answer goes back to the loop."""
        from catbuddy.tui.screens.memory import DreamScreen

        def answered(choice: ev.DreamChoice | None) -> None:
            if self.loop is not None:
                self.loop.answer_dream(proposal.proposal_id, choice or ev.DreamChoice.LATER)
            self.prompt.focus()

        await self.push_screen(DreamScreen(proposal), callback=answered)

    async def slash_sessions(self, argument: str) -> None:
        from catbuddy.tui.screens.sessions import SessionPicker

        sessions = self.agent.list_sessions()
        await self.push_screen(SessionPicker(sessions, self.agent.session_id), callback=self._picked_session)

    async def slash_resume(self, argument: str) -> None:
        if argument:
            await self._resume(argument)
        else:
            await self.slash_sessions(argument)

    def _picked_session(self, session_id: str | None) -> None:
        if session_id and session_id != self.agent.session_id:
            self.run_worker(self._resume(session_id), group="resume")
        self.prompt.focus()

    async def _resume(self, session_id: str) -> None:
        if self.running():
            await self.agent.stop()
        try:
            await self.agent.resume(session_id)
        except Exception as exc:  # unknown id, locked by another catbuddy: say so, keep the current session
            self.notice(f"Could not resume {session_id}: {exc}", "error")
            return
        await self.show_session()
        self.notice(f"Resumed session {session_id}", "success")

    async def slash_model(self, argument: str) -> None:
        if not argument:
            known = sorted(name for name in self.settings.models if name != "default")
            names = [self.agent.model] + [name for name in known if name != self.agent.model]
            if len(names) == 1:
                self.notice(
                    f"Model: {self.agent.model}. Switch with /model NAME "
                    '(add [models."NAME"] to config.toml to list it here).',
                    "info",
                )
                return
            from catbuddy.tui.screens.choice import ChoicePicker

            choices = [(name, _model_note(self.settings, name)) for name in names]
            await self.push_screen(
                ChoicePicker("Model for this session", choices, self.agent.model), callback=self._picked_model
            )
            return
        self._switch_model(argument)

    def _picked_model(self, name: str | None) -> None:
        if name and name != self.agent.model:
            self._switch_model(name)
        self.prompt.focus()

    def _switch_model(self, name: str) -> None:
        try:
            self.agent.set_model(name)
        except ValueError as exc:
            self.notice(str(exc), "error")
            return
        self.status.set(model=self.agent.model)
        self.refresh_context()
        effort = name.partition(" ")[2].strip()
        said = f" (reasoning effort: {effort})" if effort else ""
        self.notice(f"Model for this session: {self.agent.model}{said}", "success")

    async def slash_approval(self, argument: str) -> None:
        if not argument:
            from catbuddy.tui.screens.choice import ChoicePicker

            await self.push_screen(
                ChoicePicker("Approval mode", list(APPROVAL_DESCRIPTIONS.items()), self.agent.approval_mode),
                callback=self._picked_approval,
            )
            return
        if argument not in APPROVAL_MODES:
            self.notice(
                f"`{argument}` is not a mode. Choose with /approval " + " | ".join(APPROVAL_MODES), "warning"
            )
            return
        self._switch_approval(argument)

    def _picked_approval(self, mode: str | None) -> None:
        if mode and mode != self.agent.approval_mode:
            self._switch_approval(mode)
        self.prompt.focus()

    def _switch_approval(self, mode: str) -> None:
        self.agent.set_approval_mode(mode)
        self.status.set(approval=self.agent.approval_mode)
        self.notice(f"Approval mode: {self.agent.approval_mode}", "warning" if mode == "yolo" else "success")

    async def slash_copy(self, argument: str) -> None:
        text = _last_reply(self.agent.transcript())
        if not text:
            self.notice("No reply to copy yet.", "info")
            return
        self.copy_to_clipboard(text)
        fallback = self.workspace.home / COPY_FALLBACK_NAME
        try:
            fallback.parent.mkdir(parents=True, exist_ok=True)
            fallback.write_text(text, encoding="utf-8")
            where = f" If your terminal ignores OSC 52, it is also in {fallback}"
        except OSError:
            where = ""
        self.notice(f"Copied the last reply ({len(text):,} characters) to the clipboard.{where}", "success")


def _last_reply(entries: Sequence[HistoryEntry]) -> str:
    for entry in reversed(entries):
        message = entry.message
        if message.get("role") == "assistant":
            text = content_text(message.get("content"))
            if text.strip():
                return text
    return ""


def _model_note(settings: Any, name: str) -> str:
    spec = settings.model_spec(name)
    return f"window {spec.context_window:,}, max output {spec.max_output_tokens:,}"
