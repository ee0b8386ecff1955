"""The scripted server's "short" summary mode: catbuddy's compaction requests, however they are
made, get a short summary (so a keyless demo can show a compaction that saves tokens); other
requests still take the script's replies."""

from __future__ import annotations

import openai
import pytest

from catbuddy.context.compaction.compactor import Compactor
from catbuddy.context.counting.tokens import counter_for
from catbuddy.testing.script import (
    SUMMARY_MARKER,
    ScriptError,
    is_summary_request,
    script_from_json,
    short_summary,
)
from catbuddy.testing.scripted_llm import ScriptedLLM

HISTORY = [
    {"role": "user", "content": "Please refactor the parser so that nested tables load.\n\n[runtime: time=x]"},
    {"role": "assistant", "content": "Done. " + "I rewrote the table loader and its tests. " * 40},
]


def compactor() -> Compactor:
    async def unused(*args, **kwargs):  # the requests are built here, sent by the tests
        raise AssertionError("not called")

    return Compactor(
        counter_for("o200k_base"), context_window=8192, max_output_tokens=1024, safety_margin=512, summarize=unused
    )


def chunk_request() -> list[dict]:
    return compactor().build_request(None, ["user: hi", "assistant: hello"], None, 1, 1, 300)


def live_request() -> list[dict]:
    return compactor().live_request(
        [{"role": "system", "content": "You are catbuddy."}, *HISTORY], None, ledger="", kept=[], target=300
    )


@pytest.mark.parametrize("build", [chunk_request, live_request], ids=["chunked", "live prefix"])
def test_both_kinds_of_compaction_request_are_recognised(build) -> None:
    assert is_summary_request({"messages": build()})


def test_a_chat_request_is_not_a_summary_request() -> None:
    assert not is_summary_request({"messages": HISTORY})
    mentions = [{"role": "user", "content": f"What does '{SUMMARY_MARKER}' mean?"}]
    assert not is_summary_request({"messages": mentions})  # quoting the prompt is not asking for it


def test_the_short_summary_is_shorter_than_what_it_replaces_and_has_the_sections() -> None:
    counter = counter_for("o200k_base")
    request = {"messages": live_request()}
    summary = short_summary(request).text
    assert counter.count_text(summary) < counter.count_messages(HISTORY) / 2
    for section in ("## Goal", "## Rules and preferences", "## Decisions", "## State of the work",
                    "## Open questions", "## Next step"):
        assert section in summary
    assert "Please refactor the parser" in summary  # it names what the user said last


@pytest.mark.parametrize("build", [chunk_request, live_request], ids=["chunked", "live prefix"])
def test_short_mode_answers_summaries_without_using_the_script(build) -> None:
    with ScriptedLLM(["first scripted reply"], strict=True, short_summaries=True) as llm:
        sdk = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
        summary = sdk.chat.completions.create(model="scripted", messages=build())
        chat = sdk.chat.completions.create(model="scripted", messages=HISTORY[:1])
    assert summary.choices[0].message.content.startswith("## Goal")
    assert chat.choices[0].message.content == "first scripted reply"


def test_without_short_mode_a_summary_request_takes_the_next_reply() -> None:
    with ScriptedLLM(["scripted summary"], strict=True) as llm:
        sdk = openai.OpenAI(base_url=llm.base_url, api_key="k", max_retries=0)
        reply = sdk.chat.completions.create(model="scripted", messages=chunk_request())
    assert reply.choices[0].message.content == "scripted summary"


def test_a_script_file_chooses_the_mode_and_a_wrong_value_is_named() -> None:
    assert script_from_json({"replies": ["a"], "summaries": "short"}).options["summaries"] == "short"
    with pytest.raises(ScriptError, match="`summaries` must be one of script, short"):
        script_from_json({"replies": ["a"], "summaries": "tiny"})
