"""What `catbuddy run` must not import before its first model request.

Everything imported on the way to the first request sits on its critical path, under the GIL, in front
of the openai SDK; these modules are only needed later (the first command checked, the first HTML page,
the first recall, a Dream run, …) and import at that point. A fresh interpreter imports the headless
command, the loop and every built-in tool, then reports which of them were loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import catbuddy

ON_THE_RUN_PATH = (
    "catbuddy.cli_commands.headless",
    "catbuddy.agent.loop",
    "catbuddy.tools.files",
    "catbuddy.tools.grep",
    "catbuddy.tools.list_dir",
    "catbuddy.tools.recall",
    "catbuddy.tools.shell",
    "catbuddy.tools.web",
    "catbuddy.tools.skill",
)
LATER = (
    "catbuddy.memory.dreamer",  # Dream runs when asked or when the app is idle
    "catbuddy.memory.apply",
    "catbuddy.memory.versions",  # the first write_file/edit_file, or Dream
    "catbuddy.safety.shell_parse",  # the first command checked
    "catbuddy.safety.shell_programs",
    "catbuddy.safety.shell_words",
    "catbuddy.safety.code_scan",
    "catbuddy.safety.exec_decision",  # the exec rules: read-only, destructive, remembered commands
    "catbuddy.safety.readonly",
    "catbuddy.tools.html_to_markdown",  # the first HTML page fetched
    "html.parser",
    "catbuddy.session.search",  # the first recall
    "yaml",  # the first skill frontmatter parsed
    "email.utils",  # an HTTP-date Retry-After
    "openai",  # the provider is built lazily (llm/lazy.py)
    "anthropic",  # only for provider = "anthropic", built lazily too
    "tiktoken",  # the Rust tokenizer loads past the Python budget or in the TUI warm-up (context/counting/tokens.py)
    "regex",  # the first count (context/counting/bpe.py)
)


def test_the_run_path_leaves_later_modules_unimported() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {ON_THE_RUN_PATH!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps([name for name in {LATER!r} if name in sys.modules]))\n"
    )
    root = str(Path(catbuddy.__file__).parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
