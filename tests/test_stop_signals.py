"""SIGTERM/SIGHUP handling for the front ends: the first signal stops, handlers are removed after."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from catbuddy.stop_signals import cancel_current_task, install_stop_signals, stop_on_signals


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_the_first_signal_calls_back_with_its_number(signum: int) -> None:
    seen: list[int] = []
    caught, remove = install_stop_signals(seen.append)
    try:
        os.kill(os.getpid(), signum)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
    finally:
        remove()
    assert seen == [signum] and caught.exit_code == 128 + signum


async def test_cancel_current_task_stops_the_work_like_ctrl_c() -> None:
    async def work() -> str:
        with stop_on_signals(cancel_current_task()) as caught:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                return f"stopped by {caught.signum}"
        return "not stopped"

    assert await asyncio.wait_for(work(), 5) == f"stopped by {signal.SIGTERM}"
