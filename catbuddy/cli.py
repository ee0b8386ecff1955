"""The `catbuddy` command. Heavy imports (openai, textual, mcp) stay inside the commands that need them."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from catbuddy import __version__
from catbuddy.config import ConfigError, Settings, load_settings
from catbuddy.workspace import Workspace, default_home

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

app = typer.Typer(
    name="catbuddy",
    help="catbuddy 🐱 — a local-first terminal coding assistant. With no command, opens the terminal app.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
mcp_app = typer.Typer(help="MCP servers: list them and their tools.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@dataclass
class GlobalOptions:
    cwd: Path | None = None
    model: str | None = None
    base_url: str | None = None
    approval: str | None = None


def fail(message: str, code: int = EXIT_FAILED) -> typer.Exit:
    typer.echo(f"catbuddy: {message}", err=True)
    return typer.Exit(code)


def load(
    ctx: typer.Context | None,
    *,
    cwd: Path | None = None,
    model: str | None = None,
    base_url: str | None = None,
    approval: str | None = None,
    ensure_home: bool = True,
) -> tuple[Workspace, Settings]:
    """Workspace and settings from the global options, then the command's own flags."""
    glob = ctx.obj if ctx is not None and isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
    root = cwd or glob.cwd
    if root is not None and not root.is_dir():
        raise fail(f"--cwd {root}: no such directory", EXIT_USAGE)
    workspace = Workspace.at(root, default_home())
    flags = {
        "model": model or glob.model,
        "base_url": base_url or glob.base_url,
        "approval": approval or glob.approval,
    }
    try:
        settings = load_settings(workspace.home, workspace.work_root, flags=flags)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if ensure_home:
        try:
            workspace.ensure_home()
        except OSError as exc:
            raise fail(f"cannot create {workspace.home}: {exc}. Set CATBUDDY_HOME to a writable folder.") from None
    return workspace, settings


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"catbuddy {__version__}")
        raise typer.Exit()


CwdOption = Annotated[Path | None, typer.Option("--cwd", help="Work root (default: the current directory).")]
ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model name (overrides config and CATBUDDY_MODEL).")]
BaseUrlOption = Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (overrides OPENAI_BASE_URL).")]
ApprovalOption = Annotated[
    str | None, typer.Option("--approval", "-a", help="Approval mode: ask, auto-edit or yolo.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@app.callback(invoke_without_command=True)
def main_callback(
    ctx: typer.Context,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    approval: ApprovalOption = None,
    continue_latest: Annotated[bool, typer.Option("--continue", "-c", help="Resume the latest session here.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")] = None,
    inline: Annotated[bool, typer.Option("--inline", help="Run inline in the terminal's scrollback.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    ctx.obj = GlobalOptions(cwd=cwd, model=model, base_url=base_url, approval=approval)
    if ctx.invoked_subcommand is not None:
        return
    workspace, settings = load(ctx)
    _first_run_init(workspace)
    from catbuddy.tui.app import run_tui

    session_id = run_tui(workspace, settings, resume=resume, continue_latest=continue_latest, inline=inline)
    if session_id:
        typer.echo(f"Resume this session with: catbuddy --resume {session_id}")


def _first_run_init(workspace: Workspace) -> None:
    """The first run in a directory creates its workspace (never overwriting anything)."""
    if not workspace.project_dir.exists():
        workspace.init_project()


@app.command()
def init(ctx: typer.Context, cwd: CwdOption = None) -> None:
    """Create the project workspace (.catbuddy/) from the shipped defaults, never overwriting a file."""
    workspace, _ = load(ctx, cwd=cwd)
    created = workspace.init_project()
    if created:
        for path in created:
            typer.echo(f"created {path}")
    else:
        typer.echo(f"{workspace.project_dir} is already set up; nothing changed.")


def _read_request(source: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot read {source}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"{source} is not valid JSON ({exc}). Expected {{\"messages\": [...], \"tools\": [...]}}.", EXIT_USAGE) from None
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise fail(f'{source}: expected a chat request object with a "messages" list', EXIT_USAGE)
    if not all(isinstance(m, dict) and "role" in m for m in data["messages"]):
        raise fail(f'{source}: every item of "messages" must be an object with a "role"', EXIT_USAGE)
    tools = data.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise fail(f'{source}: "tools" must be a list of tool objects', EXIT_USAGE)
    return data


@app.command()
def count(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="Chat request JSON file, or - for standard input.")] = "-",
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Count the tokens of an OpenAI chat request ({"messages": [...], "tools": [...]})."""
    from catbuddy.context.tokens import counter_for

    workspace, settings = load(ctx, model=model, ensure_home=False)
    request = _read_request(source)
    model_name = request.get("model") if not (model or settings.model) and request.get("model") else settings.model_name
    counter = counter_for(settings.encoding_for(model_name))
    breakdown = counter.breakdown(request["messages"], request.get("tools"))
    if as_json:
        out = {
            "model": model_name,
            "encoding": counter.encoding_name,
            "exact": counter.exact,
            "total_tokens": breakdown.total,
            "messages": breakdown.messages,
            "tools_tokens": breakdown.tools_tokens,
        }
        typer.echo(json.dumps(out, indent=2))
    else:
        typer.echo(str(breakdown.total))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
