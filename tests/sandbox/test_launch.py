"""The bwrap command line a sandboxed exec gets."""

from __future__ import annotations

from pathlib import Path

from catbuddy.sandbox import SandboxStatus
from catbuddy.sandbox.launch import bwrap_argv, plan

ACTIVE = SandboxStatus("workspace-write", True, bwrap="/usr/bin/bwrap")


def pairs(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_the_sandbox_binds_in_an_order_where_protection_wins(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".catbuddy").mkdir(parents=True)
    home = root / "home-inside"
    home.mkdir()
    argv = bwrap_argv(ACTIVE, "make", work_root=root, home=home)
    assert argv[-4:] == ["--", "bash", "-c", "make"]
    assert {"--die-with-parent", "--unshare-pid", "--unshare-net", "--new-session"} <= set(argv)
    assert pairs(argv, "--cap-drop") == ["ALL"]
    binds, ro = argv.index("--bind"), [i for i, a in enumerate(argv) if a == "--ro-bind"]
    assert pairs(argv, "--bind")[-1] == str(root.resolve())
    assert str(home.resolve()) in pairs(argv, "--ro-bind") and str((root / ".catbuddy").resolve()) in pairs(argv, "--ro-bind")
    assert all(index > binds for index in ro[1:])  # after `--ro-bind / /`, every read-only bind comes last
    assert pairs(argv, "--chdir") == [str(root.resolve())]


def test_network_and_writable_paths_follow_the_settings(tmp_path: Path) -> None:
    extra = tmp_path / "cache"
    extra.mkdir()
    status = SandboxStatus("workspace-write", True, bwrap="b", network=True, writable=(str(extra), "relative/x"))
    argv = bwrap_argv(status, "true", work_root=tmp_path, home=tmp_path / "h")
    assert "--unshare-net" not in argv
    assert pairs(argv, "--bind-try") == [str(extra.resolve())]


def test_without_a_sandbox_the_supervisor_runs_the_command() -> None:
    launch = plan("make", status=SandboxStatus("off", False), work_root=Path("/w"), home=Path("/h"))
    assert not launch.sandboxed and launch.argv[-3:] == ["bash", "-c", "make"]
    assert launch.argv[1:3] == ["-I", "-S"] and launch.argv[3].endswith("reaper.py")


def test_only_path_entries_under_tmp_are_given_back(tmp_path: Path) -> None:
    from catbuddy.sandbox.launch import tools_under_tmp

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("")
    plain = tmp_path / "tools"
    plain.mkdir()
    found = tools_under_tmp(f"{venv / 'bin'}:{plain}:/usr/bin:relative/bin:{tmp_path / 'missing'}")
    assert str(venv.resolve()) in found and str(plain.resolve()) in found
    assert not any(entry.startswith("/usr") for entry in found) and len(found) <= 3
