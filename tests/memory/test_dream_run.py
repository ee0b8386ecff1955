"""A Dream run against the scripted server through the real openai SDK: what reaches the model, what
is written, and that a failed or refused run changes nothing and leaves the cursor where it was."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from dream_helpers import DreamBrain, answer, is_dream_request, request_text

from catbuddy.llm.lazy import LazyProvider
from catbuddy.memory.dream import DreamResult, DreamStatus
from catbuddy.memory.dreamer import Dreamer, DreamProposal
from catbuddy.memory.factory import make_dreamer
from catbuddy.memory.journal import Journal
from catbuddy.memory.lock import DreamLock
from catbuddy.memory.paths import MemoryPaths
from catbuddy.memory.state import DreamState
from catbuddy.memory.versions import MemoryVersions
from catbuddy.testing.script import Reply
from catbuddy.testing.scripted_llm import ScriptedLLM
from catbuddy.workspace import Workspace

KEY = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0"


@pytest.fixture
async def dream(workspace: Workspace, paths: MemoryPaths) -> AsyncIterator[Callable[..., Any]]:
    """``await dream(llm, **settings)`` → (result, dreamer): propose, then apply unless told otherwise."""
    sources: list[LazyProvider] = []

    async def run(llm: ScriptedLLM, *, apply: bool = True, **overrides: Any) -> tuple[Any, Dreamer]:
        settings = llm.settings(**overrides)
        source = LazyProvider(settings)
        sources.append(source)
        dreamer = make_dreamer(workspace, settings, source, secrets=(settings.api_key,))
        outcome = await dreamer.propose()
        if isinstance(outcome, DreamProposal) and apply:
            outcome = dreamer.apply(outcome)
        if isinstance(outcome, DreamResult):
            dreamer.record(outcome)
        return outcome, dreamer

    yield run
    for source in sources:
        await source.aclose()


def entries(journal: Journal, *texts: str, session: str = "s-1") -> None:
    for text in texts:
        journal.append(session, "session", text)


def write_project(paths: MemoryPaths, text: str) -> None:
    paths.project_memory.parent.mkdir(parents=True, exist_ok=True)
    paths.project_memory.write_text(text)


def snapshot(paths: MemoryPaths) -> tuple[Any, ...]:
    files = tuple(p.read_text() if p.exists() else None for p in (paths.global_memory, paths.project_memory))
    return files, Journal(paths).cursor()[0]


async def test_facts_land_in_both_files_with_a_version_and_the_cursor_moves(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: I always use pnpm.\nAssistant: ok", "User: tests run with `make test`")
    brain = DreamBrain([answer("ADD: Prefers pnpm over npm.", "ADD: Tests run with `make test`.")])
    scripted_llm.push(brain)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.APPLIED, result.message
    assert "- Prefers pnpm over npm." in paths.global_memory.read_text()
    assert "- Tests run with `make test`." in paths.project_memory.read_text()
    assert Journal(paths).cursor() == (2, None)
    log = [json.loads(line) for line in paths.versions_log.read_text().splitlines()]
    assert {line["file"] for line in log} == {"global", "project"}
    assert all(line["source"] == "dream" and line["sessions"] == ["s-1"] for line in log)
    assert (result.added, result.removed, result.updated, result.change) == (2, 0, 0, 1)
    assert DreamState.load(paths.state).last.status == "applied"


async def test_the_request_has_no_tools_numbered_memory_context_files_and_the_entries(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths, workspace: Workspace
) -> None:
    write_project(paths, "# Memory\n\n## Build\n- Build with `make`\n- CI on GitHub\n")
    (workspace.project_dir / "USER.md").write_text("# User\nName: Ada, answers in German please.\n")
    entries(journal, "User: the CI moved to GitLab")
    scripted_llm.push(DreamBrain([answer("NONE", "UPDATE 2: CI on GitLab")]))
    result, _ = await dream(scripted_llm, compact_model="small-model")
    assert result.status is DreamStatus.APPLIED
    body = scripted_llm.requests[0].body
    assert is_dream_request(body) and "tools" not in body
    assert body["model"] == "small-model"  # the compact model, as no dream_model is set
    text = request_text(body)
    assert "[1] Build with `make`\n[2] CI on GitHub" in text and "## Build" in text
    assert "Name: Ada, answers in German please." in text
    assert "User: the CI moved to GitLab" in text
    assert paths.project_memory.read_text() == "# Memory\n\n## Build\n- Build with `make`\n- CI on GitLab\n"


async def test_dream_model_wins_over_the_compact_model(scripted_llm: ScriptedLLM, dream, journal) -> None:
    from catbuddy.config import MemorySettings

    entries(journal, "User: hi")
    scripted_llm.push(DreamBrain())
    await dream(scripted_llm, compact_model="small", memory=MemorySettings(dream_model="dreamer-1"))
    assert scripted_llm.requests[0].body["model"] == "dreamer-1"


async def test_nothing_pending_means_no_model_call(scripted_llm: ScriptedLLM, dream) -> None:
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.NOTHING and scripted_llm.requests == []


async def test_an_all_none_answer_moves_the_cursor_and_writes_nothing(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: hello", "User: bye")
    before = snapshot(paths)[0]
    scripted_llm.push(DreamBrain([answer()]))
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.UNCHANGED
    assert snapshot(paths) == (before, 2)
    assert not paths.versions_log.exists()


async def test_prose_twice_changes_nothing_and_the_cursor_stays(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: I like tabs")
    before = snapshot(paths)
    brain = DreamBrain(["I think the user likes tabs.", "Really, they like tabs!"])
    scripted_llm.push(brain, brain)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.FAILED and "rejected twice" in result.message
    assert snapshot(paths) == before
    retry = scripted_llm.requests[1].body["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I think the user likes tabs."}
    assert "text outside the two sections" in retry[-1]["content"]
    assert DreamState.load(paths.state).failures == 1


async def test_an_invalid_answer_gets_one_retry_and_a_valid_retry_is_applied(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    write_project(paths, "- one\n- two\n")
    entries(journal, "User: x")
    brain = DreamBrain([answer("NONE", "UPDATE 7: seven"), answer("NONE", "UPDATE 2: two, fixed")])
    scripted_llm.push(brain, brain)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.APPLIED
    assert "there is no [7] (its numbered lines are [1]–[2])" in request_text(scripted_llm.requests[1].body)
    assert paths.project_memory.read_text() == "- one\n- two, fixed\n"


async def test_deleting_everything_is_refused_and_nothing_is_lost(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    write_project(paths, "".join(f"- fact {n}\n" for n in range(1, 10)))
    entries(journal, "User: forget everything")
    wipe = answer("NONE", [f"DELETE {n}" for n in range(1, 10)])
    brain = DreamBrain([wipe, wipe])
    scripted_llm.push(brain, brain)
    before = snapshot(paths)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.FAILED
    assert "at most 3 (a third)" in result.message
    assert snapshot(paths) == before


async def test_a_key_is_never_stored_nor_sent_back_and_the_cursor_stays(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: the deploy needs a token")
    leak = answer("NONE", [f"ADD: The OpenAI key is {KEY}", "ADD: Deploys go through `make deploy`"])
    brain = DreamBrain([leak, answer("NONE", "ADD: The staging password is hunter2!")])
    scripted_llm.push(brain, brain)
    before = snapshot(paths)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.FAILED
    assert snapshot(paths) == before
    assert KEY not in result.message and "hunter2" not in result.message
    retry = json.dumps(scripted_llm.requests[1].body)
    assert KEY not in retry
    assert "never stored in memory" in retry
    for path in paths.root.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace") and "hunter2" not in path.read_text(
                errors="replace"
            )


async def test_the_configured_key_is_refused_too(scripted_llm: ScriptedLLM, dream, journal, paths) -> None:
    entries(journal, "User: x")
    brain = DreamBrain([answer("ADD: my key is test-key-123456"), answer("ADD: Likes tea")])
    scripted_llm.push(brain, brain)
    result, _ = await dream(scripted_llm, api_key="test-key-123456")
    assert result.status is DreamStatus.APPLIED
    assert "test-key-123456" not in paths.global_memory.read_text()
    assert "the configured API key" in request_text(scripted_llm.requests[1].body)
    assert "test-key-123456" not in json.dumps(scripted_llm.requests[1].body["messages"])


async def test_an_answer_over_the_caps_is_sent_back_once_to_merge(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    from catbuddy.config import MemorySettings

    write_project(paths, "# Memory\n\n" + "".join(f"- fact {n}\n" for n in range(1, 9)))  # 10 lines
    entries(journal, "User: lots of facts")
    grow = answer("NONE", [f"ADD: new fact {n}" for n in range(5)])
    merge = answer("NONE", ["UPDATE 1: fact 1 and new facts 0-4", "DELETE 2"])
    brain = DreamBrain([grow, merge])
    scripted_llm.push(brain, brain)
    result, _ = await dream(scripted_llm, memory=MemorySettings(memory_max_lines=12))
    assert result.status is DreamStatus.APPLIED
    assert "Merge related facts" in request_text(scripted_llm.requests[1].body)
    text = paths.project_memory.read_text()
    assert len(text.splitlines()) <= 12 and "- fact 1 and new facts 0-4" in text and "- fact 2\n" not in text


async def test_a_provider_error_changes_nothing_three_pause_and_a_run_by_hand_resumes(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: x")
    before = snapshot(paths)
    for _ in range(3):
        scripted_llm.push(Reply.error(500, "the model is down", code="server_error"))
        result, dreamer = await dream(scripted_llm)
        assert result.status is DreamStatus.FAILED and "the model is down" in result.message
    assert snapshot(paths) == before
    assert dreamer.paused() and DreamState.load(paths.state).failures == 3
    dreamer.unpause()  # what /dream and `catbuddy dream` do
    assert not dreamer.paused()


async def test_a_hand_edited_prose_file_is_read_and_its_lines_can_be_updated(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    write_project(paths, "This project is a CLI in Rust.\nIt builds with cargo.\n")
    entries(journal, "User: we switched to Zig")
    scripted_llm.push(DreamBrain([answer("NONE", "UPDATE 1: This project is a CLI in Zig.")]))
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.APPLIED
    assert "[1] This project is a CLI in Rust.\n[2] It builds with cargo." in request_text(
        scripted_llm.requests[0].body
    )
    assert paths.project_memory.read_text() == "This project is a CLI in Zig.\nIt builds with cargo.\n"


async def test_entries_beyond_the_token_budget_wait_for_the_next_run(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    from catbuddy.config import MemorySettings

    for n in range(30):
        journal.append("s", "session", f"User: entry number {n} " + "lorem ipsum " * 60)
    brain = DreamBrain([answer(), answer()])
    scripted_llm.push(brain, brain)
    first, _ = await dream(scripted_llm, memory=MemorySettings(dream_entry_tokens=1000))
    assert 0 < first.entries < 30
    assert Journal(paths).cursor()[0] == first.entries
    text = request_text(scripted_llm.requests[0].body)
    assert "entry number 0 " in text and f"{30 - first.entries} newer entries wait" in text
    second, _ = await dream(scripted_llm, memory=MemorySettings(dream_entry_tokens=1000))
    assert Journal(paths).cursor()[0] == first.entries + second.entries
    assert "entry number 0 " not in request_text(scripted_llm.requests[1].body)


async def test_a_corrupt_journal_line_is_reported_and_the_rest_dreamt(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: one")
    with paths.journal.open("a") as handle:
        handle.write("{broken\n")
    entries(journal, "User: two")
    scripted_llm.push(DreamBrain([answer("ADD: x")]))
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.APPLIED and result.entries == 2
    assert any("line 2: skipped" in problem for problem in result.problems)


async def test_a_file_changed_while_the_proposal_waited_is_not_overwritten(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: x")
    scripted_llm.push(DreamBrain([answer("NONE", "ADD: from dream")]))
    proposal, dreamer = await dream(scripted_llm, apply=False)
    write_project(paths, "- written meanwhile by the model\n")
    result = dreamer.apply(proposal)
    assert result.status is DreamStatus.STALE
    assert paths.project_memory.read_text() == "- written meanwhile by the model\n"
    assert Journal(paths).cursor()[0] == 0
    assert not proposal.lock.held


async def test_a_second_dream_while_one_holds_the_lock_is_busy(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: x")
    with DreamLock(paths.lock):
        result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.BUSY and "dreaming for this project" in result.message
    assert scripted_llm.requests == []


async def test_a_dry_run_shows_the_diff_and_writes_nothing(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: x")
    scripted_llm.push(DreamBrain([answer("ADD: Likes tea")]))
    proposal, dreamer = await dream(scripted_llm, apply=False)
    before = snapshot(paths)
    result = dreamer.dry_run(proposal)
    assert result.status is DreamStatus.DRY_RUN and "+- Likes tea" in result.diff
    assert snapshot(paths) == before and MemoryVersions(paths).history().changes == []


async def test_an_answer_cut_off_at_the_reply_limit_is_retried_not_stored(
    scripted_llm: ScriptedLLM, dream, journal: Journal, paths: MemoryPaths
) -> None:
    entries(journal, "User: x")
    cut = Reply.text("## User Profile\n- ADD: Prefers pn", finish_reason="length")
    brain = DreamBrain([cut, answer("ADD: Prefers pnpm.")])
    scripted_llm.push(brain, brain)
    result, _ = await dream(scripted_llm)
    assert result.status is DreamStatus.APPLIED
    assert "cut off at the" in request_text(scripted_llm.requests[1].body)
    text = paths.global_memory.read_text()
    assert "- Prefers pnpm." in text and "Prefers pn\n" not in text
