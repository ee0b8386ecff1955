"""Pytest fixtures around the scripted LLM server, for any test folder.

Use in a test module or conftest.py::

    from catbuddy.testing.fixtures import scripted_llm, scripted_llm_factory  # noqa: F401

    async def test_something(scripted_llm):
        scripted_llm.push(Reply.text("hi"))
        settings = scripted_llm.settings()   # model "scripted", base_url and key set, no retries

``scripted_llm`` is strict: a request beyond the pushed replies gets a 400 ``script_exhausted``
error, so a test that calls the model more often than it meant to fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from catbuddy.testing.scripted_llm import ScriptedLLM


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started strict server with an empty script; push replies, read ``.requests``."""
    with ScriptedLLM(strict=True) as llm:
        yield llm


@pytest.fixture
def scripted_llm_factory() -> Iterator[Callable[..., ScriptedLLM]]:
    """``factory(replies, **options)`` starts a server (strict unless told otherwise), closed after the test."""
    started: list[ScriptedLLM] = []

    def factory(script: Any = (), **options: Any) -> ScriptedLLM:
        options.setdefault("strict", True)
        llm = ScriptedLLM(script, **options).start()
        started.append(llm)
        return llm

    yield factory
    for llm in started:
        llm.close()
