"""One measure of a request: the status bar, /context, `catbuddy context` and the request sent agree."""

from __future__ import annotations

import math

from catbuddy.agent.events import ContextStatus
from catbuddy.cli_commands.context_view import build_view
from catbuddy.context.counting import calibration as calibration_module
from catbuddy.testing.script import Reply


async def test_the_status_before_a_call_is_the_request_the_server_received(workspace, scripted_llm, make_loop):
    (workspace.work_root / "a.py").write_text("print('hello')\n" * 40)
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.py"}), Reply.text("It prints hello."))
    loop, events = await make_loop(scripted_llm)

    await loop.run_turn("what does a.py do?")

    counter = loop.turn_context().counter
    factor = loop.turn_context().calibration_factor
    statuses = events.of(ContextStatus)
    sent = [math.ceil(counter.count_request(r.messages, r.tools) * factor) for r in scripted_llm.requests]
    # Before each call, the figure of the request it sends; between them, after the tool-call reply, the
    # history with that reply (what /context shows while the tool runs).
    used = [s.used for s in statuses]
    assert used[0] == sent[0] and used[2] == sent[1]
    assert sent[0] < used[1] < sent[1]


async def test_the_status_after_a_turn_is_what_context_shows(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.text("Hi there, " * 30))
    loop, events = await make_loop(scripted_llm)

    await loop.run_turn("hello")

    shown = events.of(ContextStatus)[-1]
    report = loop.context_report()
    assert (shown.used, shown.budget, shown.compact_at) == (
        report.used,
        report.budget,
        report.compact_threshold_tokens,
    )


async def test_catbuddy_context_measures_a_session_as_the_loop_does(workspace, scripted_llm, make_loop):
    scripted_llm.push(Reply.text("An answer " * 50))
    loop, _ = await make_loop(scripted_llm)
    await loop.run_turn("a question")
    in_app = loop.context_report()
    session_id = loop.session_id
    await loop.aclose()

    view = build_view(workspace, loop.settings, session_id=session_id, connect_mcp=False)

    assert view.report.used == in_app.used
    assert view.report.history_tokens == in_app.history_tokens


async def test_the_prompt_and_schemas_are_built_once_per_model_call(workspace, scripted_llm, make_loop):
    (workspace.work_root / "a.py").write_text("x = 1\n")
    scripted_llm.push(Reply.tool_call("read_file", {"path": "a.py"}), Reply.text("x is 1"))
    loop, _ = await make_loop(scripted_llm)
    builds = []
    original = loop.builder.build
    loop.builder.build = lambda channel="tui": builds.append(channel) or original(channel)  # type: ignore[method-assign]

    await loop.run_turn("what is x?")

    model_calls = len(scripted_llm.requests)
    # one per model call; the status measured when the turn ends reuses the last call's
    assert len(builds) == model_calls == 2
    assert loop.registry.schemas() is loop.registry.schemas()


async def test_the_calibration_file_is_read_once_per_process(workspace, scripted_llm, make_loop, monkeypatch):
    reads = []
    original = calibration_module._read
    monkeypatch.setattr(calibration_module, "_read", lambda path: reads.append(path) or original(path))
    scripted_llm.push(Reply.text("one"), Reply.text("two"))
    loop, _ = await make_loop(scripted_llm)

    await loop.run_turn("first")
    await loop.run_turn("second")

    assert len(reads) == 1
