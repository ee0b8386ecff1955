"""The bench/ scripts as modules for tests: bench/ is not a package, so it joins sys.path while one is used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


@contextmanager
def bench_module(name: str) -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
