"""A second line for code handed to an interpreter (`python -c`, `perl -e`, `node -e`, `awk`, `… | python`):
destructive calls on a dangerous path, and shell commands the code runs (`os.system("…")`, backticks).

This is pattern matching and can never be complete; the sandbox is the first line. It exists so the plain
forms (`shutil.rmtree("/")`, `os.system("rm -rf ~")`) are refused outright rather than run in a sandbox that
would still let them wipe the work root.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_CODE_CHARS = 200_000
MAX_SHELL_STRINGS = 32
_STRING = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
_HOME_EXPRESSIONS = re.compile(
    r"""expanduser\(\s*(?:f|r)?['"]~/?['"]|Path\.home\(\)|\bhomedir\(\)|Dir\.home|os\.environ\[\s*['"]HOME['"]\s*\]"""
    r"""|getenv\(\s*['"]HOME['"]\s*\)|environ\.get\(\s*['"]HOME['"]|process\.env\.HOME|ENV\[\s*['"]HOME['"]\s*\]"""
    r"""|\$ENV\{\s*['"]?HOME['"]?\s*\}"""
)
_DESTRUCTIVE_CALL = re.compile(
    r"\b(rmtree|removedirs|rm_rf|rm_r|remove_dir_all|rmSync|rimraf(?:\.sync)?|removeSync|emptyDirSync|rmdirSync"
    r"|remove_entry_secure|deltree|rmdir|unlinkSync|rm)\s*\((?P<arg>[^)]{0,300})",
)
_SHELL_CALL = re.compile(
    r"\b(system|popen|spawn\w*|exec\w*|run|call|check_call|check_output|Popen|getoutput|getstatusoutput"
    r"|shell_exec|passthru|spawnSync|execSync|execFileSync)\s*\((?P<args>[^)]{0,2000})"
)
_BACKTICKS = re.compile(r"`([^`\n]{1,2000})`|\bqx\s*[({\[/](.{1,2000}?)[)}\]/]|%x\((.{1,2000}?)\)")
_LITERAL = re.compile(_STRING)


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def destructive_targets(code: str, home: str) -> Iterator[str]:
    """Paths that a destructive call in ``code`` is given: literals, or the home directory."""
    for match in _DESTRUCTIVE_CALL.finditer(code[:MAX_CODE_CHARS]):
        argument = match.group("arg")
        if _HOME_EXPRESSIONS.search(argument):
            yield home
        first = _LITERAL.match(argument.strip().lstrip("rfbRFB"))
        if first:
            yield _unquote(first.group(0))


def shell_strings(code: str) -> list[str]:
    """Command lines that ``code`` hands to a shell: string arguments of system()/subprocess/exec calls
    (a list of literals is joined with spaces), and backtick / qx / %x() strings."""
    found: list[str] = []
    text = code[:MAX_CODE_CHARS]
    for match in _SHELL_CALL.finditer(text):
        literals = [_unquote(m.group(0)) for m in _LITERAL.finditer(match.group("args"))]
        if literals:
            found.append(" ".join(literals))
    for match in _BACKTICKS.finditer(text):
        found.append(next(g for g in match.groups() if g is not None))
    return found[:MAX_SHELL_STRINGS]
