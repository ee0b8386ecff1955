"""COMPACT without a server: what is folded, and the summarizer requests (docs/architecture.md §5)."""

from __future__ import annotations

from typing import Any

import pytest

from catbuddy.context.compaction.compactor import (
    CompactionFailed,
    Compactor,
    plan_compaction,
    render_message,
)
from catbuddy.context.counting.tokens import counter_for
from catbuddy.session.history import HistoryEntry

COUNTER = counter_for("o200k_base")
SECTIONS = (
    "## Goal",
    "## Rules and preferences",
    "## Decisions",
    "## State of the work",
    "## Open questions",
    "## Next step",
)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def asst(text: str | None = None, *call_ids: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if call_ids:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
            }
            for cid in call_ids
        ]
    return message


def result(call_id: str, text: str = "print('a')") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def entries(messages: list[dict[str, Any]]) -> list[HistoryEntry]:
    return [HistoryEntry(f"m{i:06d}", m) for i, m in enumerate(messages, start=1)]


def chat(pairs: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(pairs):
        out += [user(f"question {i}"), asst(f"answer {i}")]
    return out


class Recorder:
    """A summarizer that records each request and answers with a short summary."""

    def __init__(self, replies: list[str] | None = None) -> None:
        self.requests: list[list[dict[str, Any]]] = []
        self.max_tokens: list[int] = []
        self.options: list[dict[str, Any]] = []
        self.replies = replies

    async def __call__(self, messages: list[dict[str, Any]], max_tokens: int, **options: Any) -> str:
        self.requests.append(messages)
        self.options.append(options)
        self.max_tokens.append(max_tokens)
        if self.replies is not None:
            return self.replies.pop(0)
        return f"## Goal and user requests\nsummary #{len(self.requests)}"


def compactor(
    summarize: Any, window: int = 8000, max_output: int = 1000, calibration: float = 1.0
) -> Compactor:
    return Compactor(
        COUNTER,
        context_window=window,
        max_output_tokens=max_output,
        safety_margin=1024,
        summarize=summarize,
        calibration=calibration,
    )


# --- what is folded --------------------------------------------------------------------------------


def test_plan_keeps_the_newest_messages_verbatim_when_the_boundary_is_a_user_message() -> None:
    history = entries(chat(30))  # 60 messages, user at every even index
    plan = plan_compaction(history, keep_recent=26)
    assert plan is not None
    assert plan.keep == history[-26:]
    assert plan.fold == history[:-26]
    assert plan.folded_through == history[-27].id


def test_plan_moves_the_boundary_back_to_a_user_message() -> None:
    history = entries(chat(30))
    plan = plan_compaction(history, keep_recent=25)  # newest 25 starts on an assistant message
    assert plan is not None
    assert len(plan.keep) == 26
    assert plan.keep[0].message["role"] == "user"


def test_plan_never_separates_a_tool_call_from_its_result() -> None:
    messages = chat(10) + [user("read it"), asst(None, "c1", "c2"), result("c1"), result("c2"), asst("done")]
    messages += chat(2)
    history = entries(messages)
    for keep in range(1, 10):
        plan = plan_compaction(history, keep_recent=keep)
        assert plan is not None
        assert plan.keep[0].message["role"] == "user"
        results = {m.message["tool_call_id"] for m in plan.keep if m.message["role"] == "tool"}
        calls = {c["id"] for m in plan.keep for c in m.message.get("tool_calls") or ()}
        assert results == calls


def test_plan_is_none_when_nothing_can_be_folded() -> None:
    assert plan_compaction(entries(chat(5)), keep_recent=25) is None
    # one long turn: no user message to start the kept part on, except the first
    turn = [user("go")] + [m for i in range(20) for m in (asst(None, f"c{i}"), result(f"c{i}"))]
    assert plan_compaction(entries(turn), keep_recent=5) is None


def test_transcript_names_tools_and_keeps_call_arguments() -> None:
    call = asst("let me look", "c1")
    names = {"c1": "read_file"}
    assert render_message(call, names) == 'ASSISTANT:\nlet me look\n[calls read_file {"path": "a.py"}]'
    assert render_message(result("c1", "x = 1"), names) == "TOOL RESULT (read_file):\nx = 1"


# --- the summary request ---------------------------------------------------------------------------


async def test_one_request_with_the_prompt_the_previous_summary_and_the_folded_messages() -> None:
    summarize = Recorder()
    outcome = await compactor(summarize).compact(
        "the old summary", chat(20), instructions="keep the API design decisions"
    )
    assert outcome.chunks == 1
    [request] = summarize.requests
    system, body = request[0]["content"], request[1]["content"]
    assert [m["role"] for m in request] == ["system", "user"]
    for section in SECTIONS:
        assert section in system
    assert '"keep the API design decisions"' in system
    assert "the old summary" in body
    assert "USER:\nquestion 0" in body and "ASSISTANT:\nanswer 19" in body
    assert outcome.summary == "## Goal and user requests\nsummary #1"


async def test_first_compaction_says_there_is_no_previous_summary() -> None:
    summarize = Recorder()
    await compactor(summarize).compact(None, chat(20))
    assert "(none: this is the first compaction)" in summarize.requests[0][1]["content"]
    assert "focus on" not in summarize.requests[0][0]["content"]


async def test_folds_in_chunks_that_each_fit_the_window_when_the_history_does_not() -> None:
    summarize = Recorder()
    window, max_output = 4000, 500
    folded = [user(f"step {i}: " + "lorem ipsum dolor sit amet " * 40) for i in range(30)]
    assert COUNTER.count_messages(folded) > window
    outcome = await compactor(summarize, window, max_output).compact("prior", folded)
    assert outcome.chunks == len(summarize.requests) > 1
    for request, max_tokens in zip(summarize.requests, summarize.max_tokens, strict=True):
        assert COUNTER.count_request(request) + max_tokens + 1024 <= window
    # each part carries the summary of the parts before it, and says which part it is
    assert "prior" in summarize.requests[0][1]["content"]
    for index, request in enumerate(summarize.requests[1:], start=1):
        assert f"summary #{index}" in request[1]["content"]
        assert f"part {index + 1} of {outcome.chunks}" in request[0]["content"]
    # every folded message reached the summarizer exactly once
    bodies = "".join(r[1]["content"] for r in summarize.requests)
    assert all(bodies.count(f"step {i}: ") == 1 for i in range(30))


async def test_a_huge_old_tool_result_is_shortened_inside_the_summary_input() -> None:
    summarize = Recorder()
    huge = "HEAD " + "0123456789 " * 6000 + " TAIL"
    folded = [user("read it"), asst(None, "c1"), result("c1", huge), asst("read")]
    await compactor(summarize, 8000, 1000).compact(None, folded)
    [request] = summarize.requests
    body = request[1]["content"]
    assert "HEAD" in body and "TAIL" in body and "cut from this message of the summary input" in body
    assert COUNTER.count_request(request) + 1000 + 1024 <= 8000


async def test_calibration_makes_the_summary_requests_smaller() -> None:
    folded = [user(f"step {i}: " + "lorem ipsum dolor sit amet " * 40) for i in range(30)]
    plain, calibrated = Recorder(), Recorder()
    await compactor(plain, 4000, 500).compact(None, folded)
    await compactor(calibrated, 4000, 500, calibration=1.5).compact(None, folded)
    assert len(calibrated.requests) > len(plain.requests)
    for request in calibrated.requests:
        assert COUNTER.count_request(request) * 1.5 + 500 + 1024 <= 4000


async def test_a_long_previous_summary_leaves_less_room_for_the_first_chunk() -> None:
    summarize = Recorder()
    previous = "an old, long summary. " * 400  # far above the summary's own output budget
    folded = [user(f"step {i}: " + "lorem ipsum dolor sit amet " * 40) for i in range(10)]
    await compactor(summarize, 8000, 1000).compact(previous, folded)
    for request in summarize.requests:
        assert COUNTER.count_request(request) + 1000 + 1024 <= 8000


# --- failures ---------------------------------------------------------------------------------------


async def test_an_empty_summary_fails() -> None:
    with pytest.raises(CompactionFailed, match="empty summary"):
        await compactor(Recorder(["   "])).compact(None, chat(20))


async def test_a_summary_longer_than_what_it_replaces_fails() -> None:
    with pytest.raises(CompactionFailed, match="not shorter"):
        await compactor(Recorder(["word " * 400])).compact(None, chat(20))


async def test_a_provider_error_fails_with_its_message() -> None:
    async def broken(messages: list[dict[str, Any]], max_tokens: int) -> str:
        raise RuntimeError("502 bad gateway")

    with pytest.raises(CompactionFailed, match="502 bad gateway"):
        await compactor(broken).compact(None, chat(20))


async def test_a_window_too_small_for_any_summary_request_fails_clearly() -> None:
    with pytest.raises(CompactionFailed, match="raise context_window"):
        await compactor(Recorder(), window=1500, max_output=200).compact(None, chat(20))


# --- on the live prefix -----------------------------------------------------------------------------


async def test_the_live_request_is_the_prefix_plus_one_user_message_and_asks_for_no_tools() -> None:
    summarize = Recorder()
    prefix = [{"role": "system", "content": "the chat's system prompt"}, *chat(20)]
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]
    c = compactor(summarize, window=16000)
    request = c.live_request(prefix, "keep names", ledger="## Ledger\nFiles read: `a.py`", kept=chat(3), target=300)
    assert request[:-1] == prefix and request[-1]["role"] == "user"
    assert "keep names" in request[-1]["content"] and "Files read: `a.py`" in request[-1]["content"]
    assert 'from the user message that begins "question 0"' in request[-1]["content"]
    assert c.live_fits(COUNTER.count_request(prefix), request)
    assert not c.live_fits(16000, request)

    result = await c.compact_live(request, tools, replaced=COUNTER.count_messages(prefix))

    assert summarize.requests == [request]
    assert summarize.options == [{"tools": tools, "tool_choice": "none"}]
    assert result.mode == "live_prefix" and result.chunks == 1


async def test_a_chunked_request_carries_the_ledger_and_gets_no_tools() -> None:
    summarize = Recorder()
    await compactor(summarize).compact(None, chat(20), ledger="## Ledger\nFiles changed: `b.py`")
    assert "# Ledger\nFiles changed: `b.py`" in summarize.requests[0][1]["content"]
    assert "is in the input" in summarize.requests[0][0]["content"]
    assert summarize.options == [{}]
