"""`catbuddy demo`: the app against the shipped scripted model, with no key and no footprint.

The scripted server runs in this process (a thread), in a temporary home and work root that are
removed on exit, so the user's config, sessions and repository are never touched. The window is
small and the summaries short, so a compaction and `/context` changing are seen within a minute.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

DEMO_SCRIPT = "demo_script.json"  # package data of catbuddy.testing
DEMO_WINDOW = 8192
DEMO_MAX_OUTPUT = 1024
DEMO_SAFETY_MARGIN = 512
DEMO_KEEP_RECENT = 2  # messages kept after a fold (moved back to a user message): the history is short
# Of the budget: the fixed part (system prompt + tools from the shipped defaults) is ~3.7k of 6.6k, so the
# threshold sits a few hundred tokens above it and the third typed message or so crosses it.
DEMO_COMPACT_RATIO = 0.68
# Sent for the user when the app opens, so the scripted model greets before anything is typed.
FIRST_MESSAGE = "Hi catbuddy! What does this demo show?"
DEMO_FILES = {
    "README.md": "# tally\n\nA tiny word counter, here so the demo has a project to look at.\n\n"
    "Run it: `python tally.py FILE`\n",
    "tally.py": 'import sys\n\n\ndef count_words(text: str) -> int:\n    """Words separated by whitespace."""\n'
    "    return len(text.split())\n\n\nif __name__ == \"__main__\":\n"
    "    print(count_words(open(sys.argv[1], encoding=\"utf-8\").read()))\n",
}
FAREWELL = (
    "The demo is over and its temporary folder removed; your config and sessions were not touched.\n"
    "Use a real model: run `catbuddy` (a set-up screen asks for the endpoint, model and key)."
)


@dataclass
class Demo:
    """A running demo: the server, and where the app's home and work root are."""

    llm: Any  # ScriptedLLM
    home: Path
    work_root: Path

    def settings(self) -> Any:
        from catbuddy.config import ContextSettings, MemorySettings, ModelSpec, Settings
        from catbuddy.testing.script import DEFAULT_MODEL

        return Settings(
            model=DEFAULT_MODEL,
            base_url=self.llm.base_url,
            api_key="demo",
            max_retries=0,
            models={DEFAULT_MODEL: ModelSpec(DEMO_WINDOW, DEMO_MAX_OUTPUT)},
            context=ContextSettings(
                compact_keep_recent=DEMO_KEEP_RECENT,
                compact_token_ratio=DEMO_COMPACT_RATIO,
                safety_margin=DEMO_SAFETY_MARGIN,
            ),
            memory=MemorySettings(dream="off"),  # Dream would ask the scripted model, pointlessly
        )

    def workspace(self) -> Any:
        from catbuddy.workspace import Workspace

        return Workspace(work_root=self.work_root, home=self.home)


def demo_script_path() -> Path:
    return Path(str(resources.files("catbuddy.testing").joinpath(DEMO_SCRIPT)))


@contextmanager
def running_demo(script: Path | None = None) -> Iterator[Demo]:
    """Start the scripted server in a temporary folder; stop it and remove the folder afterwards."""
    from catbuddy.testing.script import load_script
    from catbuddy.testing.scripted_llm import ScriptedLLM

    loaded = load_script(script or demo_script_path())
    with tempfile.TemporaryDirectory(prefix="catbuddy-demo-") as folder:
        base = Path(folder)
        root = base / "tally"
        root.mkdir()
        for name, text in DEMO_FILES.items():
            (root / name).write_text(text, encoding="utf-8")
        llm = ScriptedLLM(
            loaded.replies,
            strict=loaded.options.get("exhausted") == "error",
            short_summaries=loaded.options.get("summaries") == "short",
        )
        llm.start()
        try:
            yield Demo(llm, base / "home", root)
        finally:
            llm.close()


def run_demo(*, inline: bool = False) -> str:
    """Run the app on the demo until the user exits; returns the farewell to print."""
    from catbuddy.logs import log_to_file
    from catbuddy.tui.app import CatbuddyApp

    with running_demo() as demo:
        workspace = demo.workspace()
        workspace.ensure_home()
        log_to_file(workspace.home)  # log lines must never reach the app's screen
        app = CatbuddyApp(workspace, demo.settings(), first_message=FIRST_MESSAGE)
        app.run(inline=inline)
    return FAREWELL
