"""What a turn's checkpoint costs, against `git status` on the same tree in the same run; and undo time.

Run: ``python bench/bench_checkpoint.py [--files 10000] [--mb 200] [--turns 5]`` (``--quick``: 500 files,
5 MB, 2 turns). A tree of generated source-like files is committed to a git repository; one warm-up
checkpoint fills the shadow repository (its cost is shown, once per project). Then each round is one
turn that touches 3 files: the checkpoint before its first write plus the one after it (what every turn
that writes pays), beside `git status` on the user's repository in the same round. Target: a turn's
checkpoints cost at most 2× one `git status` (medians). Then the turns are undone one by one, newest first
(plan and restore), and timed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _table import Figure, exit_status, print_table, quick, report, unavailable, without_quick  # noqa: E402

from catbuddy.checkpoints.manager import Checkpoints  # noqa: E402

TARGET_RATIO = 2.0
FILES_PER_DIR = 100
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def generate(root: Path, files: int, total_bytes: int) -> None:
    """``files`` files of about ``total_bytes / files`` bytes each, in folders of 100."""
    size = max(total_bytes // files, 64)
    for n in range(files):
        path = module_path(root, n)
        path.parent.mkdir(parents=True, exist_ok=True)
        line = f"def function_{n}(value):  # generated line for file {n}\n    return value * {n}\n"
        path.write_text((line * (size // len(line) + 1))[:size])


def module_path(root: Path, n: int) -> Path:
    return root / f"pkg{n // FILES_PER_DIR:03d}" / f"module_{n:05d}.py"


def run(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def timed(action) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = action()
    return (time.perf_counter() - started) * 1000, result


def main(files: int, megabytes: int, turns: int) -> int:
    if shutil.which("git") is None:
        unavailable("bench_checkpoint", "checkpoint cost", "git is not installed")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "project", Path(tmp) / "home"
        root.mkdir()
        started = time.perf_counter()
        generate(root, files, megabytes * 1_000_000)
        run([*GIT, "init", "-q"], root)
        run([*GIT, "add", "-A"], root)
        run([*GIT, "commit", "-qm", "generated"], root)
        print(
            f"generated and committed {files:,} files, {megabytes} MB in {time.perf_counter() - started:.1f} s"
        )
        checkpoints = Checkpoints(home, root, 10_000_000)
        first, _ = timed(checkpoints.shadow.snapshot)
        run(["git", "status", "--porcelain"], root)  # warm the user's index too
        per_turn: list[float] = []
        status: list[float] = []
        undo: list[float] = []
        by_command: list[float] = []
        for turn in range(2 * turns):
            status.append(run(["git", "status", "--porcelain"], root))
            checkpoints.begin_turn("bench", f"m{turn:06d}")
            before, _ = timed(checkpoints.before_write)
            paths = [module_path(root, (turn * 37 + k * 101) % files) for k in range(3)]
            command = turn % 2 == 1  # every other turn changes its files by a command
            checkpoints.note_writes(None if command else paths)
            for path in paths:  # the turn touches 3 files
                path.write_text(path.read_text() + f"# turn {turn}\n")
            after, _ = timed(checkpoints.end_turn)
            (by_command if command else per_turn).append(before + after)
        for _ in range(2 * turns):  # then undo them, newest first
            planned, restore = timed(checkpoints.plan_undo)
            assert restore is not None and len(restore.paths) == 3  # type: ignore[attr-defined]
            applied, _ = timed(lambda r=restore: checkpoints.apply(r, undo=True))  # type: ignore[misc]
            undo.append(planned + applied)
        turn_ms, status_ms, undo_ms, command_ms = (
            statistics.median(x) for x in (per_turn, status, undo, by_command)
        )
        print_table(
            f"checkpoints on {files:,} files / {megabytes} MB, median of {turns} turns of each kind touching 3 files (ms)",
            [
                "first checkpoint (once)",
                "git status",
                "turn (file tools)",
                "× git status",
                "turn (a command)",
                "× git status",
                "undo of a turn",
            ],
            [
                [
                    round(first),
                    round(status_ms, 1),
                    round(turn_ms, 1),
                    round(turn_ms / status_ms, 2),
                    round(command_ms, 1),
                    round(command_ms / status_ms, 2),
                    round(undo_ms, 1),
                ]
            ],
        )
        figures = [
            Figure("checkpoints of a turn touching 3 files (before + after)", turn_ms,
                   "git status on the same tree, same rounds", status_ms, target=TARGET_RATIO),
            Figure("checkpoints of a turn whose command touched 3 files", command_ms,
                   "git status on the same tree, same rounds", status_ms),
            Figure("undo of that turn (plan + restore)", undo_ms, "git status on the same tree, same rounds",
                   status_ms),
            Figure("first checkpoint of the project (once)", first, "git status on the same tree", status_ms),
        ]  # fmt: skip
    return exit_status(report("bench_checkpoint", figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args(without_quick(sys.argv[1:]))
    if quick():
        args.files, args.mb, args.turns = 500, 5, 2
    raise SystemExit(main(args.files, args.mb, args.turns))
