"""bench/bench_peers.py: the task scripts, the checks that a run did the work, the "unavailable" path, and
real catbuddy runs of each task against the scripted server (nanobot's only when CATBUDDY_BENCH_NANOBOT
names one)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from bench_modules import bench_module

from catbuddy.testing.scripted_llm import RecordedRequest, Reply, ScriptedLLM


@pytest.fixture(scope="module")
def peers():
    with bench_module("bench_peers") as module:
        yield module


@pytest.fixture(scope="module")
def bench(peers, tmp_path_factory):
    """One scripted server and temp root for the real runs of this module (prepared homes are reused)."""
    root = tmp_path_factory.mktemp("peers")
    with ScriptedLLM(strict=True) as llm:
        yield peers.Bench(root, llm, root / "tiktoken")


def fake_nanobot_side(peers, tmp_path: Path):
    found = peers.nanobot.Nanobot(tmp_path, tmp_path / "bin" / "nanobot", "nanobot v0")
    return peers.nanobot_side(found)


def run_of(peers, requests: list[RecordedRequest], scripted: int, stdout: str = "", returncode: int = 0):
    return peers.Run("x", "y", returncode, stdout, "", 1.0, 0.5, requests, scripted, 0)


def request(index: int, messages: list[dict], outcome: str = "streamed") -> RecordedRequest:
    record = RecordedRequest(index, "/v1/chat/completions", {"messages": messages}, {})
    record.outcome = outcome
    return record


def test_each_side_scripts_the_same_replies_in_its_own_tool_vocabulary(peers, tmp_path):
    ours, theirs = peers.catbuddy_side(), fake_nanobot_side(peers, tmp_path)
    target = tmp_path / "stats.py"
    mine, peer = peers.fix_script(ours, target), peers.fix_script(theirs, target)
    assert [c.name for r in mine for c in r.tool_calls] == ["read_file", "edit_file"]
    assert mine[1].tool_calls[0].arguments == {
        "path": str(target), "old_string": peers.BUG_LINE, "new_string": peers.FIX_LINE,
    }  # fmt: skip
    assert peer[1].tool_calls[0].arguments == {
        "path": str(target), "old_text": peers.BUG_LINE, "new_text": peers.FIX_LINE,
    }  # fmt: skip
    assert [r.text for r in mine] == [r.text for r in peer] and peers.MARKER in mine[-1].text
    assert {r.chunk_size for r in [*mine, *peer]} == {peers.CHUNK_SIZE}
    assert peers.chat_script(ours, target) == peers.chat_script(theirs, target)
    assert len(peers.CHAT_REPLY) > 1_000  # a reply long enough for streaming to count


def test_the_two_sides_start_as_a_user_starts_them(peers, tmp_path):
    ours, theirs = peers.catbuddy_side(), fake_nanobot_side(peers, tmp_path)
    assert ours.command("hi")[1:] == ["run", "hi"] and Path(ours.command("hi")[0]).name == "catbuddy"
    assert theirs.command("hi") == [str(tmp_path / "bin" / "nanobot"), "agent", "-m", "hi"]
    ours.configure(tmp_path / "home", "http://127.0.0.1:1/v1")
    theirs.configure(tmp_path / "home", "http://127.0.0.1:1/v1")
    assert 'approval = "auto-edit"' in (tmp_path / "home" / ".catbuddy" / "config.toml").read_text()
    config = json.loads((tmp_path / "home" / ".nanobot" / "config.json").read_text())
    assert config["providers"]["custom"]["apiBase"] == "http://127.0.0.1:1/v1"
    assert config["agents"]["defaults"] == {"model": peers.MODEL, "provider": "custom"}


def test_the_fix_check_wants_the_file_fixed_and_the_bug_shown_by_the_read(peers, tmp_path):
    target = tmp_path / "stats.py"
    shown = [request(1, []), request(2, [{"role": "tool", "content": peers.BUG_LINE}]), request(3, [])]
    target.write_text(peers.FIXED)
    assert peers.fix_check(target, run_of(peers, shown, 3)) == []
    target.write_text(peers.BUGGY)
    assert peers.fix_check(target, run_of(peers, shown, 3)) == ["stats.py is not fixed"]
    target.write_text(peers.FIXED)
    unread = [request(1, []), request(2, [{"role": "tool", "content": "Error: not found"}])]
    assert "did not show the buggy line" in peers.fix_check(target, run_of(peers, unread, 2))[0]


def test_every_task_wants_exit_0_every_scripted_reply_used_and_the_reply_printed(peers, tmp_path):
    target = tmp_path / "stats.py"
    target.write_text(peers.BUGGY)
    good = run_of(peers, [request(1, [])], 1, stdout=f"{peers.MARKER}: …")
    assert peers.CHAT.problems(target, good) == []
    failed = run_of(peers, [request(1, [], outcome="error 400")], 2, returncode=1)
    assert peers.CHAT.problems(target, failed) == [
        "exit status 1",
        "1 requests for 2 scripted replies",
        "request outcomes ['error 400']",
        "the final reply is not on stdout",
    ]
    target.write_text(peers.FIXED)
    assert peers.CHAT.problems(target, good) == ["stats.py changed in a chat"]


@pytest.mark.parametrize("setting", ["", "missing", "broken"])
def test_without_a_runnable_nanobot_the_figures_are_unavailable_and_the_bench_exits_0(
    peers, tmp_path, monkeypatch, capsys, setting
):
    rows = tmp_path / "rows.jsonl"
    monkeypatch.setenv("CATBUDDY_BENCH_ROWS", str(rows))
    if setting == "":
        monkeypatch.delenv(peers.nanobot.NANOBOT_ENV, raising=False)
        monkeypatch.setattr(peers.nanobot, "DEFAULT_VENV", tmp_path / "no-venv-here")
    else:
        venv = tmp_path / "venv"
        if setting == "broken":
            script = venv / "bin" / "nanobot"
            script.parent.mkdir(parents=True)
            script.write_text("#!/bin/sh\necho 'ImportError: no module named nanobot' >&2\nexit 1\n")
            script.chmod(0o755)
        monkeypatch.setenv(peers.nanobot.NANOBOT_ENV, str(venv))
    assert peers.main() == 0
    [row] = [json.loads(line) for line in rows.read_text().splitlines()]
    assert row["bench"] == "bench_peers" and row["unavailable"].startswith("whole run against nanobot")
    expected = {"": "is not set", "missing": "no executable", "broken": "exited 1: ImportError"}[setting]
    assert expected in row["reason"] and "unavailable" in capsys.readouterr().out


def test_the_prepared_home_keeps_the_set_up_but_no_conversation(peers, bench):
    side = peers.catbuddy_side()
    home = bench.templates.get(side.name) or bench.prepare(side)
    assert (home / ".catbuddy" / "config.toml").is_file()
    assert not (home / ".catbuddy" / "projects").exists()  # the warm-up's session is gone


def test_catbuddy_chats_against_the_scripted_server(peers, bench):
    run = bench.run(peers.catbuddy_side(), peers.CHAT)
    assert run.returncode == 0 and peers.MARKER in run.stdout
    assert 0 < run.first_request < run.wall and len(run.requests) == 1
    assert run.requests[0].messages[-1]["content"].startswith(peers.CHAT_PROMPT)
    assert not list((bench.root / "runs").iterdir())  # each run's home is removed after it


def test_catbuddy_fixes_the_bug_with_its_own_tools(peers, bench):
    run = bench.run(peers.catbuddy_side(), peers.FIXBUG)
    assert (bench.project / peers.FIX_FILE).read_text() == peers.FIXED
    assert [r.messages[-1]["role"] for r in run.requests] == ["user", "tool", "tool"]


def test_a_run_that_does_not_do_the_work_fails_the_bench_instead_of_being_timed(peers, bench):
    lazy = dataclasses.replace(peers.FIXBUG, script=lambda side, target: [Reply.text(peers.MARKER)])
    with pytest.raises(peers.RunFailed, match="catbuddy fixbug did not do the work: stats.py is not fixed"):
        bench.run(peers.catbuddy_side(), lazy)


def test_nanobot_does_each_task_with_its_own_tools(peers, bench):
    found = peers.nanobot.find_nanobot()
    if isinstance(found, str):
        pytest.skip(found)
    assert peers.nanobot.seed_tiktoken_cache(bench.tiktoken_cache) is None
    side = peers.nanobot_side(found)
    chat = bench.run(side, peers.CHAT)
    assert peers.MARKER in chat.stdout and 0 < chat.first_request < chat.wall
    fixed = bench.run(side, peers.FIXBUG)
    assert (bench.project / peers.FIX_FILE).read_text() == peers.FIXED
    assert {"read_file", "edit_file"} <= {t["function"]["name"] for t in fixed.requests[0].tools}
