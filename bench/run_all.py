"""Run every benchmark in this folder, one after the other; each prints its own table.

    python bench/run_all.py [NAME ...]     # e.g. python bench/run_all.py context governance
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    benches = sorted(HERE.glob("bench_*.py"))
    if argv:
        benches = [b for b in benches if any(name in b.stem for name in argv)]
    failed = []
    for bench in benches:
        print(f"\n##### {bench.stem}\n", flush=True)
        if subprocess.call([sys.executable, str(bench)]) != 0:
            failed.append(bench.stem)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
