"""The first message of a session appears the moment it is sent: the provider (the openai SDK) is
built in a worker thread, and a message sent before the session has opened is shown at once too."""

from __future__ import annotations

import asyncio
import threading

from fake_loop import FakeLoop
from helpers import texts, wait_for

from catbuddy.agent.loop import AgentLoop
from catbuddy.config import Settings
from catbuddy.llm.lazy import openai_provider
from catbuddy.testing.script import Reply
from catbuddy.tui.app import CatbuddyApp
from catbuddy.tui.widgets.messages import UserBlock
from catbuddy.tui.widgets.reply import AssistantBlock

SIZE = (100, 32)


async def test_the_message_is_on_screen_while_the_provider_is_still_being_built(workspace, scripted_llm) -> None:
    scripted_llm.push(Reply.text("here I am"))
    release = threading.Event()
    building: list[str] = []

    def slow_provider(settings):  # stands in for a slow `import openai`; runs in a worker thread
        building.append(threading.current_thread().name)
        release.wait(10)
        return openai_provider(settings)

    def factory(ws, st, **kwargs):
        return AgentLoop(ws, st, channel="tui", provider_factory=slow_provider, **kwargs)

    settings = Settings(model="scripted", base_url=scripted_llm.base_url, api_key="k", max_retries=0)
    app = CatbuddyApp(workspace, settings, loop_factory=factory, approval_arm_delay=0)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.loop and building, what="provider warm-up started")
            app.prompt.load_text("first message")
            await pilot.press("enter")
            await wait_for(pilot, lambda: texts(app, UserBlock) == ["first message"], what="user block")
            assert not release.is_set() and app.loop.provider._provider is None  # still building
            assert building[0] != threading.main_thread().name  # never on the event loop's thread
            release.set()
            await wait_for(pilot, lambda: texts(app, AssistantBlock) == ["here I am"], what="reply")
            assert texts(app, UserBlock) == ["first message"]  # shown once, not again at turn start
    finally:
        release.set()


class SlowStartLoop(FakeLoop):
    """A loop whose session takes its time to open (a big session to read, a slow disk)."""

    gate: asyncio.Event

    async def start(self) -> None:
        await self.gate.wait()


async def test_messages_sent_before_the_session_opens_show_at_once_then_run_in_order(
    workspace, settings
) -> None:
    gate = asyncio.Event()
    holder: dict[str, FakeLoop] = {}

    def factory(ws, st, **kwargs):
        loop = holder["loop"] = SlowStartLoop(ws, st, **kwargs)
        loop.gate = gate
        return loop

    app = CatbuddyApp(workspace, settings, loop_factory=factory, approval_arm_delay=0)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "loop" in holder, what="loop created")
        app.prompt.load_text("early one")
        await pilot.press("enter")
        await wait_for(pilot, lambda: texts(app, UserBlock) == ["early one"], what="shown at once")
        app.prompt.load_text("early two")
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert texts(app, UserBlock) == ["early one"]  # the second waits its turn, in the queue view
        assert app.loop is None
        gate.set()
        await wait_for(pilot, lambda: app.loop is not None, what="session open")
        loop = holder["loop"]
        await wait_for(pilot, lambda: loop.submitted == ["early one", "early two"], what="submitted")
        await pilot.pause(0.1)
        assert texts(app, UserBlock) == ["early one"]  # still once: the session view kept it
        loop.reply("first answer")
        await wait_for(pilot, lambda: texts(app, UserBlock) == ["early one", "early two"], what="second turn")
        assert [b.user_ordinal for b in app.transcript.query(UserBlock)] == [0, 1]
