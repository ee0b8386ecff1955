"""Long headless sessions keep the provider's prompt cache warm: every `catbuddy run --continue` process
derives the same request from the stored history, and the cache the server reports is recorded and shown."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from catbuddy.testing.prefix_cache import request_parts
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.testing.tool_session import SessionShape, TurnScript, run_session, turn_command

NO_COMPACTION = "\n[context]\nauto_compact = false\n"


def extends(earlier: dict, later: dict) -> bool:
    """``later`` repeats all of ``earlier`` byte for byte and only appends."""
    a, b = request_parts(earlier), request_parts(later)
    return len(b) >= len(a) and b[: len(a)] == a


@pytest.fixture(scope="module")
def session() -> object:
    """Five turns, two reads each, with batches small enough to happen inside the session."""
    shape = SessionShape(turns=5, reads_per_turn=3, config=NO_COMPACTION + "microcompact_min_tokens = 2500\n")
    return run_session(shape, json_output=True)


def test_a_new_process_repeats_the_previous_processs_last_request_as_its_prefix(session) -> None:
    bodies, _ = session.bodies_and_tokens()
    for first in session.first_request_of_turn[1:]:
        assert extends(bodies[first - 1], bodies[first]), f"the prefix broke at request {first}"


def test_the_prefix_breaks_only_where_a_batch_of_old_results_was_stubbed(session) -> None:
    bodies, _ = session.bodies_and_tokens()
    breaks = [i for i in range(1, len(bodies)) if not extends(bodies[i - 1], bodies[i])]
    assert 1 <= len(breaks) <= 3  # 15 results, 10 kept whole: one or two batches, never a slide
    for index in breaks:
        stubs_before = json.dumps(bodies[index - 1]).count("[read_file result:")
        stubs_after = json.dumps(bodies[index]).count("[read_file result:")
        assert stubs_after > stubs_before


def test_run_json_reports_the_cached_tokens_the_server_sent(session) -> None:
    served = session.served()
    reported = [json.loads(out.stdout)["usage"] for out in session.outputs]
    per_turn = [served[a:b] for a, b in zip(session.first_request_of_turn, [*session.first_request_of_turn[1:], len(served)], strict=True)]
    for usage, requests in zip(reported, per_turn, strict=True):
        assert usage["cached_tokens"] == sum(r.cached_tokens for r in requests)
    assert sum(u["cached_tokens"] for u in reported) > 0


def test_context_session_shows_the_sessions_prompt_cached_and_output_totals(session) -> None:
    env = {**os.environ, "CATBUDDY_HOME": str(session.home), "CATBUDDY_MODEL": "scripted", "OPENAI_API_KEY": "k"}
    sid = json.loads(session.outputs[-1].stdout)["session_id"]
    args = [sys.executable, "-m", "catbuddy.cli", "--cwd", str(session.project), "context", "--session", sid]
    data = json.loads(subprocess.run([*args, "--json"], env=env, capture_output=True, text=True, check=True).stdout)
    served = session.served()
    assert data["usage"]["calls"] == len(served)
    assert data["usage"]["prompt_tokens"] == sum(r.prompt_tokens for r in served)
    assert data["usage"]["cached_tokens"] == sum(r.cached_tokens for r in served)
    assert "estimated_cost_usd" not in data["usage"]  # no prices configured, no cost
    text = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    assert f"session usage: {len(served)} calls" in text and "cached" in text


def test_a_configured_price_turns_the_usage_into_an_estimated_cost(session, tmp_path) -> None:
    home = tmp_path / "home"
    shutil.copytree(session.home, home)
    with (home / "config.toml").open("a") as config:
        config.write('\n[prices.scripted]\ninput = 2.0\ncached_input = 0.2\noutput = 8.0\n')
    env = {**os.environ, "CATBUDDY_HOME": str(home), "CATBUDDY_MODEL": "scripted", "OPENAI_API_KEY": "k"}
    sid = json.loads(session.outputs[-1].stdout)["session_id"]
    args = [sys.executable, "-m", "catbuddy.cli", "--cwd", str(session.project), "context", "--session", sid, "--json"]
    usage = json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout)["usage"]
    fresh = usage["prompt_tokens"] - usage["cached_tokens"]
    expected = (fresh * 2.0 + usage["cached_tokens"] * 0.2 + usage["completion_tokens"] * 8.0) / 1e6
    assert usage["estimated_cost_usd"] == pytest.approx(expected, abs=1e-6)


def test_two_processes_resuming_the_same_session_send_byte_identical_requests(tmp_path: Path) -> None:
    """The same stored history, opened by two processes (one after a long-lived one, one fresh), is
    governed into the same request: nothing a process remembered changes it."""
    shape = SessionShape(turns=4, reads_per_turn=3, config=NO_COMPACTION + "microcompact_min_tokens = 2500\n")
    built = run_session(shape)
    firsts = []
    for copy in ("one", "two"):
        home = tmp_path / copy
        shutil.copytree(built.home, home)
        script = TurnScript()
        script.turn([])  # the next turn only answers
        with ScriptedLLM([script]) as llm:
            env = {**os.environ, "CATBUDDY_HOME": str(home), "CATBUDDY_MODEL": "scripted",
                   "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": llm.base_url}
            subprocess.run(turn_command(built.project, 4), env=env, capture_output=True, text=True, check=True,
                           stdin=subprocess.DEVNULL, timeout=120)
        body = dict(llm.requests[0].body)
        body["messages"] = body["messages"][:-1]  # the new user message carries the time it was sent
        firsts.append(json.dumps(body))
    assert firsts[0] == firsts[1]
    previous = built.served()[-1].body
    assert extends(previous, json.loads(firsts[0]))
