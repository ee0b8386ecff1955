"""The Jinja2 environment of the compaction templates (prompts live in ``templates/``, docs/architecture.md §5).

One environment per process, built on first use, so jinja2 stays off the start-up path of commands
that never compact.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from catbuddy.resources import templates_dir


@cache
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        undefined=jinja2.StrictUndefined,
    )


def render(name: str, **values: Any) -> str:
    """``templates/<name>`` rendered with ``values``, stripped."""
    return str(_environment().get_template(name).render(**values)).strip()
