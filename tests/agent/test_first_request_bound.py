"""The first request of a process goes out before the tokenizer loads when the byte bound proves it is
the request exact counting makes; the tokenizer loads while the model answers (docs/architecture.md §3,
"The first request")."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from compaction_helpers import seed, summary_requests

from catbuddy.agent import loop as loop_module
from catbuddy.agent.events import ContextStatus, TurnEndReason, UsageReported
from catbuddy.config import ContextSettings
from catbuddy.context.counting.tokens import TokenCounter
from catbuddy.testing.script import Reply

RUNTIME_TIME = re.compile(r"time=[0-9T:+-]+")


class SpyCounter(TokenCounter):
    """A counter of its own (the scripted server loads the shared ones) that notes how many requests
    the server had received when a tokenizer, Python or Rust, was first asked for."""

    def __init__(self, encoding_name: str, llm: Any) -> None:
        super().__init__(encoding_name)
        self.llm = llm
        self.requests_before_load: int | None = None

    def _note(self) -> None:
        if self.requests_before_load is None:
            self.requests_before_load = len(self.llm.requests)

    def ready(self) -> None:
        self._note()
        super().ready()

    def load(self) -> Any:
        self._note()
        return super().load()


def _timeless(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without the runtime line's clock, which differs between two turns."""
    return [{**m, "content": RUNTIME_TIME.sub("time=…", m["content"])} if m["role"] == "user" else m for m in messages]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch, scripted_llm: Any) -> SpyCounter:
    counters: dict[str, SpyCounter] = {}

    def fresh_counter_for(encoding_name: str) -> SpyCounter:
        return counters.setdefault(encoding_name, SpyCounter(encoding_name, scripted_llm))

    monkeypatch.setattr(loop_module, "counter_for", fresh_counter_for)
    return fresh_counter_for("o200k_base")


async def test_a_new_sessions_first_request_is_sent_before_the_tokenizer_loads(scripted_llm, make_loop, spy):
    scripted_llm.push(Reply.text("Hello!"))
    loop, _ = await make_loop(scripted_llm, interactive=False, channel="headless")

    outcome = await loop.run_turn("say hi")

    assert outcome.reason is TurnEndReason.DONE
    assert spy.requests_before_load == 1  # received first, counted while the model answered
    assert spy.loaded


async def test_the_request_sent_on_the_bound_is_the_one_exact_counting_makes(
    workspace, scripted_llm, make_loop, monkeypatch, caplog
):
    (workspace.project_dir / "AGENTS.md").write_text("Answer in 中文 when asked to. 🐈\n" * 20)
    scripted_llm.push(Reply.text("It prints."), Reply.text("It prints."))
    spy = SpyCounter("o200k_base", scripted_llm)
    monkeypatch.setattr(loop_module, "counter_for", lambda name: spy)
    bound_loop, _ = await make_loop(scripted_llm, interactive=False, channel="headless")
    await bound_loop.run_turn("what do you answer in?")
    preloaded = TokenCounter("o200k_base")
    preloaded.load()
    monkeypatch.setattr(loop_module, "counter_for", lambda name: preloaded)
    exact_loop, _ = await make_loop(scripted_llm, interactive=False, channel="headless")

    await exact_loop.run_turn("what do you answer in?")

    on_the_bound, counted_first = [(_timeless(r.messages), r.tools) for r in scripted_llm.requests]
    assert spy.requests_before_load == 1
    assert on_the_bound == counted_first
    assert "differs" not in caplog.text


async def test_usage_and_the_status_bar_show_exact_counts_of_a_request_sent_on_the_bound(
    scripted_llm, make_loop, spy
):
    scripted_llm.push(Reply.text("Hello " * 20))
    loop, events = await make_loop(scripted_llm, interactive=False, channel="headless")

    await loop.run_turn("say hi " * 40)

    [request] = scripted_llm.requests
    exact = TokenCounter("o200k_base").count_request(request.messages, request.tools)
    [usage] = events.of(UsageReported)
    first_status = events.of(ContextStatus)[0]
    assert spy.requests_before_load == 1
    assert usage.counted_prompt_tokens == exact
    assert first_status.used == math.ceil(exact * loop.turn_context().calibration_factor)
    assert loop.context_report().used == events.of(ContextStatus)[-1].used


async def test_old_results_to_stub_load_the_tokenizer_before_the_request(
    workspace, scripted_llm, make_loop, monkeypatch
):
    (workspace.work_root / "a.py").write_text("x = 1\n" * 400)
    context = ContextSettings(keep_recent_results=1, microcompact_min_tokens=0)
    for _ in range(3):
        scripted_llm.push(Reply.tool_call("read_file", {"path": "a.py"}))
    scripted_llm.push(Reply.text("read three times"), Reply.text("still x = 1"))
    first, _ = await make_loop(scripted_llm, context=context)
    await first.run_turn("read a.py three times")
    session_id = first.session_id
    await first.aclose()
    spy = SpyCounter("o200k_base", scripted_llm)
    monkeypatch.setattr(loop_module, "counter_for", lambda name: spy)
    resumed, events = await make_loop(scripted_llm, context=context, resume=session_id)

    await resumed.run_turn("and now?")

    assert spy.requests_before_load == 4  # loaded before the resumed turn's request
    last = scripted_llm.requests[-1]
    stubbed = [m for m in last.messages if m["role"] == "tool" and len(m["content"]) < 2400]
    assert len(stubbed) == 2  # microcompaction ran as it always does


async def test_a_history_due_for_compaction_by_messages_compacts_before_its_request(
    scripted_llm_factory, make_loop, monkeypatch
):
    llm = scripted_llm_factory([Reply.text("## Goal\nsummary", chunk_size=10_000), Reply.text("ok")])
    context = ContextSettings(compact_message_threshold=10, compact_keep_recent=4)
    loop, _ = await make_loop(llm, context=ContextSettings(auto_compact=False))
    seed(loop, 8)  # 16 short messages: due by their number alone
    session_id = loop.session_id
    await loop.aclose()
    spy = SpyCounter("o200k_base", llm)
    monkeypatch.setattr(loop_module, "counter_for", lambda name: spy)
    resumed, _ = await make_loop(llm, context=context, resume=session_id)

    outcome = await resumed.run_turn("and now?")

    assert outcome.reason is TurnEndReason.DONE
    assert len(summary_requests(llm)) == 1 and llm.requests[0] is summary_requests(llm)[0]
    assert spy.requests_before_load is not None and spy.requests_before_load <= 1


async def test_a_history_whose_bytes_pass_the_compaction_threshold_is_counted_before_its_request(
    scripted_llm, make_loop, monkeypatch
):
    # 200 tokens but 960 bytes a repeat: exactly well below the threshold, in bytes above it.
    text = "上下文工程决定了模型看到的一切。" * 20
    context = ContextSettings(compact_token_ratio=0.5)
    loop, _ = await make_loop(scripted_llm, context=context)
    seed_text = text * 70  # 14k tokens, 67k bytes: past half of the 119k budget only in bytes
    loop.conversation.append({"role": "user", "content": seed_text})
    loop.conversation.append({"role": "assistant", "content": "noted"})
    session_id = loop.session_id
    await loop.aclose()
    spy = SpyCounter("o200k_base", scripted_llm)
    monkeypatch.setattr(loop_module, "counter_for", lambda name: spy)
    scripted_llm.push(Reply.text("ok"))
    resumed, _ = await make_loop(scripted_llm, context=context, resume=session_id)

    outcome = await resumed.run_turn("and now?")

    assert outcome.reason is TurnEndReason.DONE
    assert spy.requests_before_load == 0  # counted exactly first, and not compacted: it is small
    assert not summary_requests(scripted_llm)
