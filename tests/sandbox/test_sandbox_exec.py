"""What a sandboxed command may and may not do (bubblewrap, workspace-write by default).

Destructive commands here only ever target throwaway directories under the test's tmp dir."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from sandbox_helpers import needs_bwrap, with_sandbox

from catbuddy.tools.base import ToolContext
from catbuddy.tools.shell import ExecTool

pytestmark = needs_bwrap


async def run(ctx: ToolContext, command: str) -> str:
    return (await ExecTool().run({"command": command, "timeout": 20}, ctx)).content


async def test_the_work_root_is_writable(sandbox_ctx: ToolContext) -> None:
    out = await run(sandbox_ctx, "mkdir -p src && echo hi > src/a.txt && cat src/a.txt")
    assert "hi" in out and (sandbox_ctx.work_root / "src" / "a.txt").read_text() == "hi\n"


async def test_outside_the_work_root_nothing_is_writable(sandbox_ctx: ToolContext, outside: Path) -> None:
    out = await run(sandbox_ctx, f"rm -rf {outside} ; echo new > {outside}/new.txt")
    assert (outside / "keep.txt").read_text() == "still here" and not (outside / "new.txt").exists()
    assert "[sandbox]" in out and "read-only" in out and "sandbox_writable" in out


async def test_the_read_only_note_names_the_path_in_one_line(sandbox_ctx: ToolContext, outside: Path) -> None:
    out = await run(sandbox_ctx, f"touch {outside}/x")
    notes = [line for line in out.splitlines() if line.startswith("[sandbox]")]
    assert len(notes) == 1 and f"{outside}/x is read-only" in notes[0]


def python_writes(path: Path) -> str:
    """A write the deny rules cannot see (plain Python code), so only the sandbox stands in its way."""
    return f"python3 -c 'open(\"{path}\", \"w\").write(\"x\")'"


async def test_catbuddys_home_is_read_only(sandbox_ctx: ToolContext) -> None:
    home = sandbox_ctx.workspace.home
    out = await run(sandbox_ctx, python_writes(home / "config.toml"))
    await run(sandbox_ctx, python_writes(home / "projects" / "s.jsonl"))
    assert not (home / "config.toml").exists() and not (home / "projects" / "s.jsonl").exists()
    assert "catbuddy's own files" in out


async def test_a_home_inside_the_work_root_stays_read_only(sandbox_ctx: ToolContext) -> None:
    from catbuddy.workspace import Workspace

    home = sandbox_ctx.work_root / "dot-home"
    (home / "projects").mkdir(parents=True)
    ctx = type(sandbox_ctx)(Workspace(sandbox_ctx.work_root, home), sandbox_ctx.settings)
    await run(ctx, python_writes(home / "config.toml"))
    await run(ctx, "python3 -c 'import os; os.rename(\"dot-home/projects\", \"moved\")'")
    assert not (home / "config.toml").exists() and (home / "projects").is_dir()


async def test_the_projects_catbuddy_folder_is_read_only(sandbox_ctx: ToolContext) -> None:
    config = sandbox_ctx.work_root / ".catbuddy" / "config.toml"
    config.write_text('approval = "ask"\n')
    out = await run(sandbox_ctx, "echo 'approval = \"yolo\"' > .catbuddy/config.toml; mv .catbuddy gone")
    assert config.read_text() == 'approval = "ask"\n'
    assert "write_file or edit_file" in out


async def test_tmp_is_private_and_kept_between_calls(sandbox_ctx: ToolContext, tmp_path: Path) -> None:
    marker = f"catbuddy-private-{tmp_path.name}"
    await run(sandbox_ctx, f"echo kept > /tmp/{marker}")
    assert not Path("/tmp", marker).exists()
    assert "kept" in await run(sandbox_ctx, f"cat /tmp/{marker}")


async def test_the_network_is_off_and_the_note_says_so(sandbox_ctx: ToolContext) -> None:
    server, port = _local_server()
    try:
        out = await run(
            sandbox_ctx,
            f"python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:{port}/\", timeout=5)'",
        )
    finally:
        server.shutdown()
    assert "The network is off inside the sandbox" in out and "sandbox_network = true" in out


async def test_sandbox_network_true_allows_it(sandbox_ctx: ToolContext) -> None:
    server, port = _local_server()
    ctx = with_sandbox(sandbox_ctx, network=True)
    try:
        out = await run(
            ctx,
            f"python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:{port}/\").status)'",
        )
    finally:
        server.shutdown()
    assert "200" in out and "Exit code: 0" in out


async def test_read_only_mode_makes_the_work_root_read_only(sandbox_ctx: ToolContext) -> None:
    ctx = with_sandbox(sandbox_ctx, mode="read-only")
    assert "ok" in await run(ctx, "echo ok > /tmp/t && cat /tmp/t")
    out = await run(ctx, "echo x > a.txt")
    assert not (sandbox_ctx.work_root / "a.txt").exists()
    assert 'sandbox = "read-only": nothing but /tmp is writable' in out


async def test_sandbox_writable_adds_a_path(sandbox_ctx: ToolContext, outside: Path) -> None:
    ctx = with_sandbox(sandbox_ctx, writable=(str(outside),))
    await run(ctx, f"echo new > {outside}/new.txt")
    assert (outside / "new.txt").read_text() == "new\n"


async def test_sandbox_writable_cannot_open_catbuddys_home(sandbox_ctx: ToolContext) -> None:
    home = sandbox_ctx.workspace.home
    ctx = with_sandbox(sandbox_ctx, writable=(str(home),))
    await run(ctx, f"echo x > {home}/config.toml")
    assert not (home / "config.toml").exists()


async def test_no_capabilities_and_no_host_sockets(sandbox_ctx: ToolContext) -> None:
    out = await run(sandbox_ctx, "grep CapEff /proc/self/status; ls -A /run | wc -l")
    assert "CapEff:\t0000000000000000" in out
    assert "\n0\n" in out


async def test_a_sandbox_that_cannot_start_says_so(
    sandbox_ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        '#!/bin/sh\nfor last; do :; done\n[ "$last" = true ] && exit 0\n'
        'echo "bwrap: Cannot mount proc on /newroot/proc: Operation not permitted" >&2\nexit 1\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("CATBUDDY_BWRAP", str(fake))
    out = await run(sandbox_ctx, "echo never")
    assert "[sandbox] The sandbox could not start" in out and "catbuddy doctor" in out


def _local_server() -> tuple[http.server.HTTPServer, int]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def fake_home(monkeypatch: pytest.MonkeyPatch, outside: Path) -> Path:
    """A home directory with credentials in it (outside /tmp, so the sandbox would show it)."""
    home = outside / "me"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL")
    (home / ".netrc").write_text("machine x login me password NETRC-SECRET")
    (home / "notes.txt").write_text("ordinary")
    monkeypatch.setenv("HOME", str(home))
    return home


async def test_credential_stores_are_hidden_from_commands(sandbox_ctx: ToolContext, fake_home: Path) -> None:
    out = await run(sandbox_ctx, "cat ~/.ssh/id_ed25519 ~/.netrc; ls -A ~/.ssh; cat ~/notes.txt")
    assert "PRIVATE-KEY-MATERIAL" not in out and "NETRC-SECRET" not in out
    assert "ordinary" in out


async def test_sandbox_writable_gives_a_credential_store_back(sandbox_ctx: ToolContext, fake_home: Path) -> None:
    ctx = with_sandbox(sandbox_ctx, writable=(str(fake_home / ".ssh"),))
    assert "PRIVATE-KEY-MATERIAL" in await run(ctx, "cat ~/.ssh/id_ed25519")


async def test_a_virtual_environment_under_tmp_stays_usable(
    sandbox_ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "venv"  # as CI creates one under /tmp: its bin/ is on PATH, its lib/ beside it
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "lib" / "data.txt").write_text("from the venv\n")
    tool = venv / "bin" / "venv-tool"
    tool.write_text(f"#!/bin/sh\ncat {venv}/lib/data.txt\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:/usr/bin:/bin")
    out = await run(sandbox_ctx, "venv-tool && touch /tmp/x && echo private tmp still writable")
    assert "from the venv" in out and "private tmp still writable" in out
    assert not (venv / "lib" / "x").exists()
