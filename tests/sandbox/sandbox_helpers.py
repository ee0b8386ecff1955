"""Helpers for the sandbox tests (a module of its own: conftest modules are not for importing)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from catbuddy.config import SandboxSettings
from catbuddy.sandbox import status_for
from catbuddy.tools.base import ToolContext

BWRAP_WORKS = status_for(SandboxSettings()).active
needs_bwrap = pytest.mark.skipif(not BWRAP_WORKS, reason="bubblewrap cannot start a sandbox on this machine")


def with_sandbox(ctx: ToolContext, **changes: object) -> ToolContext:
    settings = ctx.settings
    return replace(ctx, settings=replace(settings, sandbox=replace(settings.sandbox, **changes)))
