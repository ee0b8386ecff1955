"""One line for a sandboxed command that failed because of the sandbox, so the model asks the user
instead of retrying blindly: a read-only path, the network being off, or bwrap itself not starting."""

from __future__ import annotations

import os
import re

from catbuddy.sandbox.status import READ_ONLY, SandboxStatus

_READ_ONLY = re.compile(r"read-only file system", re.IGNORECASE)
_READ_ONLY_PATH = (
    re.compile(r"[‘'`\"](/[^’'`\"\n]+)[’'`\"]\s*:\s*Read-only file system", re.IGNORECASE),
    re.compile(r"Read-only file system[^\n]*?[‘'`\"](/[^’'`\"\n]+)[’'`\"]", re.IGNORECASE),
    re.compile(r"(?:^|\s)([^\s:'\"‘’`]+)\s*:\s*Read-only file system", re.IGNORECASE),
)
_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Name or service not known"
    r"|Network is unreachable|No address associated with hostname|nodename nor servname|getaddrinfo"
    r"|EAI_AGAIN|ENOTFOUND|ENETUNREACH|dial tcp: lookup|Failed to establish a new connection"
    r"|Could not connect to|Connection refused|unable to access 'https?://|Failed to connect to"
    r"|NameResolutionError|network is unreachable",
    re.IGNORECASE,
)


def sandbox_note(
    output: str, exit_code: int | None, status: SandboxStatus, own_files: list[str], cwd: str
) -> str:
    """The line to add to a failed sandboxed result, or '' when the failure was not the sandbox's."""
    if not status.active or exit_code == 0:
        return ""
    first = output.lstrip().splitlines()[0] if output.strip() else ""
    if first.startswith("bwrap:"):
        return (
            f"[sandbox] The sandbox could not start ({first}); the command did not run. Tell the user: "
            '`catbuddy doctor` shows what is wrong, or set `sandbox = "off"`.'
        )
    if _READ_ONLY.search(output):
        path = _read_only_path(output)
        if path and not path.startswith("/"):
            path = os.path.normpath(os.path.join(cwd, path))
        where = f"{path} is" if path else "the path it wrote to is"
        if path and any(path == own or path.startswith(own.rstrip("/") + "/") for own in own_files):
            return (
                f"[sandbox] {where} one of catbuddy's own files, read-only to commands. Do not retry it with "
                "exec; use write_file or edit_file, which ask the user."
            )
        writable = "nothing but /tmp is" if status.mode == READ_ONLY else "only the work root and /tmp are"
        return (
            f'[sandbox] {where} read-only here (sandbox = "{status.mode}": {writable} writable). Do not retry '
            "it: ask the user to run it themselves or to add the path to `sandbox_writable`."
        )
    if not status.network and _NETWORK.search(output):
        return (
            "[sandbox] The network is off inside the sandbox, which is likely why this failed. Do not retry "
            "it: ask the user to run it themselves or to set `sandbox_network = true`."
        )
    return ""


def _read_only_path(output: str) -> str:
    for line in output.splitlines():
        if not _READ_ONLY.search(line):
            continue
        for pattern in _READ_ONLY_PATH:
            match = pattern.search(line)
            if match:
                return match.group(1)
    return ""
