"""SIGTERM and SIGHUP end the app as Ctrl+C twice does: the loop is closed and the session id returned."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from helpers import wait_for

from catbuddy.agent.events import ContextStatus


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_stop_signal_closes_the_loop_and_exits_with_the_session(fake_app, signum) -> None:
    app, holder = fake_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_for(pilot, lambda: app.loop, what="the loop")
        os.kill(os.getpid(), signum)  # handled by the app's event loop, never by the default action
        for _ in range(250):  # the app exits: pilot.pause would wait for it forever
            if holder["loop"].closed and app.return_value is not None:
                break
            await asyncio.sleep(0.02)
    assert holder["loop"].closed
    assert app.return_value == holder["loop"].session_id


async def test_the_status_bar_follows_the_loops_context_status(fake_app) -> None:
    app, holder = fake_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_for(pilot, lambda: app.loop, what="the loop")
        holder["loop"].emit(ContextStatus(used=8_391, budget=110_592, compact_at=88_473, model="scripted"))
        await wait_for(pilot, lambda: app.status.info.used == 8_391, what="the status bar")
