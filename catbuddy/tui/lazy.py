"""A module imported on first use: for the engine's modules the TUI needs only after its first frame.

    if TYPE_CHECKING:
        from catbuddy.agent import events as ev
    else:
        ev = lazy_module("catbuddy.agent.events")

The first attribute read imports the module (thread-safe: ``importlib.import_module``) and copies its
names onto the stand-in, so later reads cost what a module attribute costs.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyModule:
    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def __getattr__(self, attribute: str) -> Any:
        module = importlib.import_module(self.__dict__["_lazy_name"])
        self.__dict__.update(vars(module))
        return getattr(module, attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_module(name: str) -> Any:
    return LazyModule(name)
