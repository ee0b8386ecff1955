"""The ACP agent: `initialize`, `session/new`, `session/load`, `session/prompt` (streaming
`session/update`), `session/cancel`, approvals as `session/request_permission`. One AgentLoop per session,
built from the same settings as everywhere (config files, environment, the command's flags).

A client that goes away mid-turn stops the turn like Esc: the session on disk stays a valid conversation
and `session/load` (or `catbuddy --resume`) continues it. Nothing is ever printed to stdout but protocol.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    PromptCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallUpdate,
    UnstructuredCommandInput,
)

from catbuddy import __version__
from catbuddy.acp.client_files import client_tools
from catbuddy.acp.updates import UpdateMapper
from catbuddy.agent import events as ev
from catbuddy.agent.custom_commands import custom_catalog
from catbuddy.agent.loop import AgentLoop
from catbuddy.errors import CatbuddyError
from catbuddy.images import ImageError, sniff_mime, store_image
from catbuddy.launch import GlobalOptions, load_workspace
from catbuddy.messages import content_text, strip_runtime_block

log = logging.getLogger(__name__)

CHANNEL = "acp"
STOP_REASONS = {ev.TurnEndReason.DONE: "end_turn", ev.TurnEndReason.STOPPED: "cancelled",
                ev.TurnEndReason.ITERATION_CAP: "max_turn_requests"}  # fmt: skip
PERMISSION_OPTIONS = [
    PermissionOption(option_id=ev.ApprovalChoice.ALLOW_ONCE.value, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ev.ApprovalChoice.ALLOW_SESSION.value, name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id=ev.ApprovalChoice.DENY.value, name="Deny", kind="reject_once"),
]  # fmt: skip
# catbuddy's approval modes are the session's modes: the editor's mode picker switches them.
MODES = {"ask": ("Ask", "Edits and commands ask first"), "auto-edit": ("Auto-edit", "Edits allowed, commands ask"),
         "yolo": ("Yolo", "Nothing asks (deny rules still apply)")}  # fmt: skip
BUILT_IN_COMMANDS = {"compact": ("Summarise older messages now", "instructions (optional)")}


@dataclass
class AcpSession:
    loop: AgentLoop
    mapper: UpdateMapper
    outbox: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    sender: asyncio.Task[None] | None = None
    asks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def id(self) -> str:
        return self.loop.session_id


class CatbuddyAcpAgent:
    """Implements ``acp.interfaces.Agent``; methods it lacks answer "method not found" (the library)."""

    def __init__(self, options: GlobalOptions) -> None:
        self.options = options
        self.client: Any = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    # --- the protocol ---------------------------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: ClientCapabilities | None = None, **kwargs: Any
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(image=True, embedded_context=True)
            ),
            agent_info=Implementation(name="catbuddy", title="catbuddy", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None  # catbuddy's key comes from its config and environment

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session = await self._open(cwd, resume=None)
        return NewSessionResponse(session_id=session.id, modes=_modes(session))

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        session = self.sessions.get(session_id)
        if session is None:
            session = await self._open(cwd, resume=session_id)
            await self._replay(session)
        return LoadSessionResponse(modes=_modes(session))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session = self._session(session_id)
        try:
            session.loop.set_approval_mode(mode_id)
        except ValueError as exc:
            raise RequestError.invalid_params({"modeId": mode_id, "message": str(exc)}) from None
        session.outbox.put_nowait(update_current_mode(mode_id))
        await self._drain(session)
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text, images = await self._prompt_text(session, prompt)
        if text.strip().split(" ")[0] == "/compact":
            await session.loop.compact(text.strip()[len("/compact") :].strip() or None)
            await self._drain(session)
            return PromptResponse(stop_reason="end_turn")
        session.loop.pending_images = images
        try:
            outcome = await session.loop.run_turn(text)
        except asyncio.CancelledError:  # the client went away (or cancelled the request): stop like Esc
            await asyncio.shield(session.loop.stop())
            raise
        await self._drain(session)
        return PromptResponse(stop_reason=STOP_REASONS.get(outcome.reason, "end_turn"))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            await session.loop.stop()

    # --- sessions -------------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params(
                {"sessionId": session_id, "message": "no such session; use session/new or session/load"}
            )
        return session

    async def _open(self, cwd: str, resume: str | None) -> AcpSession:
        root = Path(cwd)
        if not root.is_dir():
            raise RequestError.invalid_params({"cwd": cwd, "message": "no such directory"})
        options = GlobalOptions(
            cwd=root, model=self.options.model, base_url=self.options.base_url, approval=self.options.approval,
            sandbox=self.options.sandbox, trust_project=self.options.trust_project,
        )  # fmt: skip
        try:
            workspace, settings = await asyncio.to_thread(load_workspace, options)
            loop = AgentLoop(workspace, settings, channel=CHANNEL, resume=resume, interactive=True)
        except CatbuddyError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        session = AcpSession(loop, UpdateMapper(workspace.work_root))
        fs = self.capabilities.fs
        for tool in client_tools(
            self.client,
            lambda: session.id,
            read=bool(fs and fs.read_text_file),
            write=bool(fs and fs.write_text_file),
        ):
            loop.registry.register(tool)  # replaces the built-in of the same name
        loop.add_listener(lambda event: self._on_event(session, event))
        try:
            await loop.start()
        except CatbuddyError as exc:  # e.g. the session is open in another catbuddy
            await loop.aclose()
            raise RequestError.invalid_params({"message": str(exc)}) from None
        self.sessions[session.id] = session
        session.sender = asyncio.get_running_loop().create_task(self._send_updates(session))
        commands = await asyncio.to_thread(self._commands, session)  # reads the command files
        session.outbox.put_nowait(update_available_commands(commands))
        return session

    def _commands(self, session: AcpSession) -> list[AvailableCommand]:
        commands = [
            AvailableCommand(name=name, description=about, input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)))
            for name, (about, hint) in BUILT_IN_COMMANDS.items()
        ]  # fmt: skip
        for command in custom_catalog(session.loop.workspace, frozenset(BUILT_IN_COMMANDS)).commands.values():
            hint = (
                AvailableCommandInput(UnstructuredCommandInput(hint=command.argument_hint))
                if command.argument_hint
                else None
            )
            commands.append(AvailableCommand(name=command.name, description=command.description, input=hint))
        return commands

    async def _replay(self, session: AcpSession) -> None:
        """`session/load`: the conversation so far, as the client shows it."""
        for entry in session.loop.transcript():
            message = entry.message
            role = message.get("role")
            text = content_text(message.get("content"))
            if role == "user" and text:
                session.outbox.put_nowait(update_user_message_text(strip_runtime_block(text)))
            elif role == "assistant":
                if text:
                    session.outbox.put_nowait(update_agent_message_text(text))
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    session.outbox.put_nowait(
                        start_tool_call(call.get("id", ""), str(function.get("name", "")), status="completed")
                    )
            elif role == "tool" and text:
                content = [tool_content(text_block(text))]
                session.outbox.put_nowait(
                    update_tool_call(str(message.get("tool_call_id", "")), content=content)
                )
        await self._drain(session)

    async def _prompt_text(self, session: AcpSession, blocks: list[Any]) -> tuple[str, list[Path]]:
        """The prompt's blocks as catbuddy's input: text as is, files as @-mentions (or their embedded
        text, which may be an unsaved buffer), images stored in the catbuddy home."""
        parts: list[str] = []
        images: list[Path] = []
        for block in blocks:
            kind = getattr(block, "type", "")
            if kind == "text":
                parts.append(block.text)
            elif kind == "resource_link":
                parts.append(_mention(block.uri))
            elif kind == "resource":
                resource = block.resource
                if getattr(resource, "text", None) is not None:
                    parts.append(f'<file path="{_path_of(resource.uri)}">\n{resource.text}\n</file>')
            elif kind == "image":
                data = base64.b64decode(block.data)
                mime = sniff_mime(data)
                if mime is None:
                    raise RequestError.invalid_params({"message": "the image is not PNG, JPEG, GIF or WebP"})
                try:
                    stored = await asyncio.to_thread(store_image, session.loop.workspace.home, data, mime)
                except (OSError, ImageError) as exc:
                    raise RequestError.invalid_params({"message": f"cannot keep the image: {exc}"}) from None
                images.append(stored.path)
        return "\n".join(parts), images

    # --- events to the client -------------------------------------------------------------------

    def _on_event(self, session: AcpSession, event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequested):
            if event.answerable:
                task = asyncio.get_running_loop().create_task(self._ask(session, event))
                session.asks.add(task)
                task.add_done_callback(session.asks.discard)
            return
        for update in session.mapper.updates(event):
            session.outbox.put_nowait(update)

    async def _send_updates(self, session: AcpSession) -> None:
        while True:
            update = await session.outbox.get()
            try:
                await self.client.session_update(session_id=session.id, update=update)
            except Exception as exc:  # the client is gone or refused one update: keep the turn going
                log.info("session/update not delivered: %s", exc)
            finally:
                session.outbox.task_done()

    async def _drain(self, session: AcpSession) -> None:
        await session.outbox.join()

    async def _ask(self, session: AcpSession, event: ev.ApprovalRequested) -> None:
        """An approval as `session/request_permission`; no answer (cancelled, error) denies."""
        await self._drain(session)  # the tool call is announced before the question about it
        content: list[Any] | None = [tool_content(text_block(event.preview))] if event.preview else None
        tool_call = ToolCallUpdate(
            tool_call_id=event.call_id, title=f"{event.name} {event.summary}".strip(), status="pending",
            raw_input=event.arguments, content=content,
        )  # fmt: skip
        choice = ev.ApprovalChoice.DENY
        try:
            response = await self.client.request_permission(
                session_id=session.id, tool_call=tool_call, options=PERMISSION_OPTIONS
            )
            outcome = response.outcome
            if getattr(outcome, "outcome", "") == "selected":
                choice = ev.ApprovalChoice(outcome.option_id)
        except (Exception, asyncio.CancelledError) as exc:
            log.info("permission for %s not answered: %r", event.call_id, exc)
        session.loop.answer_approval(event.call_id, choice)

    async def aclose(self) -> None:
        """The client is gone: stop every turn (the sessions stay resumable) and close the loops."""
        for session in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                await session.loop.stop()
            for task in [*session.asks, *([session.sender] if session.sender else [])]:
                task.cancel()
            with contextlib.suppress(Exception):
                await session.loop.aclose()
        self.sessions.clear()


def _modes(session: AcpSession) -> SessionModeState:
    available = [SessionMode(id=mode, name=name, description=about) for mode, (name, about) in MODES.items()]
    return SessionModeState(current_mode_id=session.loop.approval_mode, available_modes=available)


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _mention(uri: str) -> str:
    path = _path_of(uri)
    return f'@"{path}"' if " " in path else f"@{path}"


async def serve(options: GlobalOptions) -> None:
    agent = CatbuddyAcpAgent(options)
    try:
        await run_agent(agent)  # type: ignore[arg-type]  # a structural match for acp.interfaces.Agent
    finally:
        await agent.aclose()


def run_acp(options: GlobalOptions) -> None:
    asyncio.run(serve(options))
