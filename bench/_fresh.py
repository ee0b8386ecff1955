"""Fresh processes measured the way a user's install runs them.

`pip install .` byte-compiles catbuddy into the environment, as it does every peer installed from a wheel.
An editable checkout has no bytecode until an import writes it, and an environment with
PYTHONDONTWRITEBYTECODE=1 never writes it: every fresh process would then compile ~150 modules (~0.1 s),
a cost no installed copy pays. So start-up benches compile the package first.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import catbuddy

PACKAGE = Path(catbuddy.__file__).resolve().parent


def compile_catbuddy() -> None:
    """Byte-compile the catbuddy package in place (a no-op for modules whose bytecode is current)."""
    compileall.compile_dir(str(PACKAGE), quiet=1)
