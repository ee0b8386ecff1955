"""The `@` file picker on a 100,000-file tree (issue 30: "fast on 100,000 files").

    python bench/bench_file_picker.py [--quick]

1. Building the list: the walk that honours .gitignore (no repository) against a bare ``os.walk`` that
   honours nothing, and ``list_files`` in a git repository against running ``git ls-files`` alone.
   Targets: the walk ≤ 3× the bare walk; the git listing ≤ 2.5× git itself (decoding, de-duplicating and deriving folders cost about as much).
2. One keystroke: ``FuzzyIndex.search`` (one C-level regular-expression scan, narrowed to the previous
   keystroke's matches, then ranking) against a plain Python loop testing every path for the letters in
   order, over every prefix of six queries typed letter by letter. Targets: ≤ 50 ms per keystroke
   (median), and ≤ 0.5× the loop.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import Figure, exit_status, quick, report  # noqa: E402

from catbuddy.mentions.files import list_files  # noqa: E402
from catbuddy.mentions.fuzzy import FuzzyIndex  # noqa: E402

FILES = 100_000
QUICK_FILES = 20_000
QUERIES = ("calc", "srcmodpy", "test_util", "readme", "zq", "m42f7")  # each typed letter by letter
QUERY_TARGET_MS = 50.0
WALK_RATIO = 3.0
GIT_RATIO = 2.5  # decoding, de-duplicating and deriving the folders costs about what git itself does
QUERY_RATIO = 0.5


def make_tree(root: Path, count: int) -> None:
    """``count`` files in a realistic shape: packages of modules, tests, docs, an ignored build folder."""
    per_folder = 50
    for index in range(count):
        package = f"pkg{index // 5000}"
        folder = root / "src" / package / f"mod{(index // per_folder) % 100}"
        if index % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        name = f"test_util_{index}.py" if index % 7 == 0 else f"m{index}f{index % 13}.py"
        (folder / name).write_bytes(b"")
    (root / "build").mkdir()
    for index in range(count // 10):  # ignored: must not be listed
        (root / "build" / f"gen{index}.o").write_bytes(b"")
    (root / ".gitignore").write_text("build/\n*.o\n")
    (root / "README.md").write_text("# bench\n")


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def bare_walk(root: Path) -> list[str]:
    out = []
    for folder, _, names in os.walk(root):
        out.extend(os.path.join(folder, name) for name in names)
    return out


def naive_search(paths: list[str], query: str) -> list[str]:
    """The baseline: each path tested in Python for the letters in order, then the 50 shortest."""
    found = []
    for path in paths:
        lowered = path.lower()
        position = 0
        for char in query:
            position = lowered.find(char, position) + 1
            if position == 0:
                break
        else:
            found.append(path)
    return sorted(found, key=len)[:50]


def keystroke_ms(
    make: Callable[[str], FuzzyIndex | None],
    keystrokes: list[str],
    repeat: int,
    paths: list[str] | None = None,
) -> float:
    """Median time of one keystroke over every prefix of every query, typed in order (a fresh index
    per query, so narrowing helps only within one query, as in the picker)."""
    times = []
    for _ in range(repeat):
        fuzzy = None
        for typed in keystrokes:
            if len(typed) == 1:
                fuzzy = make(typed)
            started = time.perf_counter()
            if fuzzy is not None:
                fuzzy.search(typed)
            else:
                naive_search(paths or [], typed)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    count = QUICK_FILES if quick() else FILES
    repeat = 3 if quick() else 5
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        print(f"making {count:,} files …", flush=True)
        make_tree(root, count)
        walk_ms = median_ms(lambda: list_files(root), repeat)
        bare_ms = median_ms(lambda: bare_walk(root), repeat)
        index = list_files(root)
        assert index.source == "walk" and not any(p.startswith("build") for p in index.paths)
        keystrokes = [query[:n] for query in QUERIES for n in range(1, len(query) + 1)]
        query_ms = keystroke_ms(lambda typed: FuzzyIndex(index.paths), keystrokes, repeat)
        naive_ms = keystroke_ms(lambda typed: None, keystrokes, repeat, index.paths)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        git_ms = median_ms(lambda: list_files(root), repeat)
        git_alone_ms = median_ms(
            lambda: subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True, check=True,
            ),
            repeat,
        )  # fmt: skip
    figures = [
        Figure(f"list {count:,} files (walk, .gitignore)", walk_ms, "bare os.walk", bare_ms, target=WALK_RATIO),
        Figure(f"list {count:,} files (git repository)", git_ms, "git ls-files alone", git_alone_ms, target=GIT_RATIO),
        Figure("one keystroke: fuzzy search", query_ms, "Python loop, all paths", naive_ms, target=QUERY_RATIO),
        Figure("one keystroke: fuzzy search (absolute)", query_ms, "Python loop, all paths", naive_ms,
               target=QUERY_TARGET_MS, kind="value"),
    ]  # fmt: skip
    return exit_status(report("bench_file_picker", figures))


if __name__ == "__main__":
    raise SystemExit(main())
