"""bench/bench_tui_stream.py: both sides stream the scripted server's reply onto a headless screen and
report CPU seconds per reply (tiny replies here; the figures come from running the bench)."""

from __future__ import annotations

import pytest
from bench_modules import bench_module

from catbuddy.testing.scripted_llm import ScriptedLLM


@pytest.fixture
def stream_bench():
    with bench_module("bench_tui_stream") as module:
        yield module


def test_the_reply_is_markdown_of_the_asked_size_with_code_lists_and_tables(stream_bench):
    text = stream_bench.markdown(5_000)

    assert len(text) == 5_000
    assert "```python" in text and "\n- " in text and "| name |" in text and "## Section" in text


@pytest.mark.parametrize("mode", ["bare", "catbuddy"])
def test_each_side_shows_every_reply_and_reports_its_cpu(stream_bench, mode):
    replies = [stream_bench.markdown(600), stream_bench.markdown(900)]
    if mode == "bare":
        replies = replies[:1]
    with ScriptedLLM([]) as llm:
        result = stream_bench.drive(llm, mode, replies)

    assert len(result["cpu"]) == len(replies) and all(value > 0 for value in result["cpu"])
    assert all(
        shown >= len(text.strip()) * 0.95 for shown, text in zip(result["chars"], replies, strict=True)
    )
