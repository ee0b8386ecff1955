"""The environment an exec child gets: catbuddy's own, minus every secret (the shell environment policy).

Dropped: the variables that hold the keys catbuddy uses (`api_key_env`, `tools.web_search_api_key_env`,
OPENAI_API_KEY), every variable whose name looks secret (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *PASSWD*,
*CREDENTIAL*), and every variable whose value is a key catbuddy holds or looks like one (an `sk-…` key, a
bearer token, a URL with a password). `exec_env_allow` lets chosen names through (shell-style patterns).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from catbuddy.redact import redact_text

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
ALWAYS_DROPPED = frozenset({"OPENAI_API_KEY"})
# Pagers and editors would wait for a terminal that is not there.
NON_INTERACTIVE_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb"}


@dataclass(frozen=True)
class ExecEnvironment:
    env: dict[str, str]
    dropped: tuple[str, ...]  # names, for `catbuddy doctor`; never the values


def exec_environment(
    base: Mapping[str, str],
    *,
    key_variables: Iterable[str] = (),
    secrets: Iterable[str] = (),
    allow: Iterable[str] = (),
) -> ExecEnvironment:
    allowed = tuple(allow)
    keys = ALWAYS_DROPPED | {name for name in key_variables if name}
    held = tuple(s for s in secrets if s)
    env: dict[str, str] = {}
    dropped: list[str] = []
    for name, value in base.items():
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed):
            env[name] = value
        elif name in keys or SECRET_NAME.search(name) or _looks_secret(value, held):
            dropped.append(name)
        else:
            env[name] = value
    env.update(NON_INTERACTIVE_ENV)
    return ExecEnvironment(env, tuple(sorted(dropped)))


def _looks_secret(value: str, held: tuple[str, ...]) -> bool:
    if any(secret in value for secret in held):
        return True
    return redact_text(value) != value
