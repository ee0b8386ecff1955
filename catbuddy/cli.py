"""The `catbuddy` command. Every import beyond typer happens inside the command that needs it, so
`catbuddy --help` loads typer and nothing else of weight (openai, textual, mcp, tree-sitter, even the
config loader)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from catbuddy import __version__
from catbuddy.errors import CatbuddyError
from catbuddy.launch import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    GlobalOptions,
    exit_now,
    load_workspace,
    open_app,
    split_arguments,
)

if TYPE_CHECKING:
    from catbuddy.config import Settings
    from catbuddy.workspace import Workspace

COUNT_NEEDS_INPUT = (
    'count reads a chat request JSON ({"messages": [...], "tools": [...]}) from a file argument or '
    "standard input; pipe one in (catbuddy count < request.json) or pass a path (catbuddy count request.json)"
)


FIRST_MESSAGE = "catbuddy.first_message"  # ctx.meta key: the app's first message from the command line


class _Commands(TyperGroup):
    """Every command, with the one handler of catbuddy's errors (docs/architecture.md §14): a known error
    is printed as `catbuddy: <message> <hint>` and ends the command with its exit code, never a traceback."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # `catbuddy [options] "PROMPT"` opens the app with PROMPT sent; `-p PROMPT` is `run PROMPT`.
        parsed = split_arguments(list(args))
        ctx.meta[FIRST_MESSAGE] = parsed.first_message
        return super().parse_args(ctx, parsed.args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CatbuddyError as exc:
            raise fail(str(exc), exc.exit_code) from None

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Each command with its whole first sentence, wrapped (click cuts it short with "...")."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, _first_sentence(command.short_help or command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _first_sentence(text: str) -> str:
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    return paragraph if end < 0 else paragraph[: end + 1]


app = typer.Typer(
    cls=_Commands,
    name="catbuddy",
    help="catbuddy 🐱 — a local-first terminal coding assistant. With no command, opens the terminal app; "
    'catbuddy "PROMPT" opens it with that message sent; catbuddy -p "PROMPT" is catbuddy run "PROMPT".',
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
mcp_app = typer.Typer(
    help="MCP servers: list them and their tools.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(mcp_app, name="mcp")
memory_app = typer.Typer(
    help="Memory versions: every write to a MEMORY.md (Dream, /memory, the model) can be reviewed and undone.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(memory_app, name="memory")


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
    sandbox: str | None = None,
    trust_project: bool = False,
    ensure_home: bool = True,
    warn_untrusted: bool = False,
) -> tuple[Workspace, Settings]:
    """Workspace and settings from the global options, then the command's own flags (launch.py)."""
    glob = ctx.obj if ctx is not None and isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
    options = GlobalOptions(
        cwd=cwd or glob.cwd,
        model=model or glob.model,
        base_url=base_url or glob.base_url,
        approval=approval or glob.approval,
        sandbox=sandbox or glob.sandbox,
        trust_project=trust_project or glob.trust_project,
    )
    return load_workspace(options, ensure_home=ensure_home, warn_untrusted=warn_untrusted)


def read_stdin() -> str:
    """Standard input as text: UTF-8, with anything undecodable shown as U+FFFD (never an error)."""
    from catbuddy.text import decode_text, valid_text

    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return decode_text(buffer.read())
    return valid_text(sys.stdin.read())


def checked_session_id(value: str | None, option: str, workspace: Workspace | None = None) -> str | None:
    """``value`` if it can name a session (and, given ``workspace``, one that exists); else exit 2."""
    if value is None:
        return None
    from catbuddy.session.store import SessionStore, session_id_problem

    problem = session_id_problem(value)
    if problem:
        raise fail(f"{option} {value!r}: {problem}. List the sessions with `catbuddy sessions`.", EXIT_USAGE)
    if workspace is not None:
        SessionStore(workspace.sessions_dir).find(value)  # SessionNotFound: a usage error
    return value


def checked_images(settings: Settings, paths: list[Path]) -> list[Path]:
    """`--image` files that can be sent (format, size, a model that takes images); else exit 2 at once."""
    if not paths:
        return []
    from catbuddy.images import ImageError, read_image, supports_vision

    model = settings.model_name
    if not supports_vision(model, settings.model_spec(model).vision):
        raise fail(
            f"{model} does not accept images; nothing was sent. Use --model with one that does, or set "
            f'vision = true under [models."{model}"] in config.toml if it does.',
            EXIT_USAGE,
        )
    for path in paths:
        try:
            read_image(path, str(path))
        except ImageError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    return [path.resolve() for path in paths]


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"catbuddy {__version__}")
        raise typer.Exit()


CwdOption = Annotated[Path | None, typer.Option("--cwd", help="Work root (default: the current directory).")]
ModelOption = Annotated[
    str | None, typer.Option("--model", "-m", help="Model name (overrides config and CATBUDDY_MODEL).")
]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint (overrides OPENAI_BASE_URL).")
]
ApprovalOption = Annotated[
    str | None, typer.Option("--approval", "-a", help="Approval mode: ask, auto-edit or yolo.")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
SandboxOption = Annotated[
    str | None,
    typer.Option(
        "--sandbox", help="How exec is confined: workspace-write, read-only or off (overrides config)."
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust-project",
        help="Trust this project's .catbuddy/config.toml (MCP servers, allow_commands, approval, sandbox, "
        "base_url, …) and remember it.",
    ),
]


@app.callback(invoke_without_command=True)
def main_callback(
    ctx: typer.Context,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
    trust_project: TrustOption = False,
    continue_latest: Annotated[
        bool, typer.Option("--continue", "-c", help="Resume the latest session here.")
    ] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")
    ] = None,
    inline: Annotated[
        bool, typer.Option("--inline", help="Run inline in the terminal's scrollback.")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    ctx.obj = GlobalOptions(
        cwd=cwd,
        model=model,
        base_url=base_url,
        approval=approval,
        sandbox=sandbox,
        trust_project=trust_project,
    )
    if ctx.invoked_subcommand is not None:
        from catbuddy.logs import log_to_stderr

        log_to_stderr()
        return
    checked_session_id(resume, "--resume")
    workspace, settings = load(ctx)
    checked_session_id(resume, "--resume", workspace)
    open_app(
        workspace,
        settings,
        ctx.obj,
        resume=resume,
        continue_latest=continue_latest,
        inline=inline,
        first_message=ctx.meta.get(FIRST_MESSAGE),
    )
    skip_teardown()  # the app has closed the session


def _log_model_calls(workspace: Workspace) -> None:
    """Retries and failed model calls of a headless command reach the log file, as the app's do."""
    from catbuddy.logs import also_log_to_file

    also_log_to_file(workspace.home)


@app.command()
def demo(
    inline: Annotated[bool, typer.Option("--inline", help="Run inline in the scrollback.")] = False,
) -> None:
    """Try catbuddy without a key: the app against a scripted model, in a temporary folder."""
    from catbuddy.cli_commands.demo import run_demo

    typer.echo(run_demo(inline=inline))


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
    from catbuddy.text import decode_text

    label = "standard input" if source == "-" else source
    try:
        text = read_stdin() if source == "-" else decode_text(Path(source).read_bytes())
    except OSError as exc:
        raise fail(f"cannot read {source}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(
            f'{label} is not valid JSON ({exc}). Expected {{"messages": [...], "tools": [...]}}.', EXIT_USAGE
        ) from None
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise fail(f'{label}: expected a chat request object with a "messages" list', EXIT_USAGE)
    if not all(isinstance(m, dict) and "role" in m for m in data["messages"]):
        raise fail(f'{label}: every item of "messages" must be an object with a "role"', EXIT_USAGE)
    tools = data.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise fail(f'{label}: "tools" must be a list of tool objects', EXIT_USAGE)
    return data


@app.command()
def count(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(help="Chat request JSON file, or - for standard input.")] = "-",
    model: ModelOption = None,
    as_json: JsonOption = False,
) -> None:
    """Count the tokens of an OpenAI chat request ({"messages": [...], "tools": [...]})."""
    from catbuddy.context.counting.tokens import counter_for

    if source == "-" and (sys.stdin is None or sys.stdin.isatty()):
        raise fail(COUNT_NEEDS_INPUT, EXIT_USAGE)  # never wait silently on a terminal
    workspace, settings = load(ctx, model=model, ensure_home=False)
    request = _read_request(source)
    model_name = (
        request.get("model")
        if not (model or settings.model) and request.get("model")
        else settings.model_name
    )
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
    skip_teardown()  # freeing the 200k-entry rank table is the slowest part of exiting


@app.command()
def context(
    ctx: typer.Context,
    cwd: CwdOption = None,
    model: ModelOption = None,
    history: Annotated[
        Path | None, typer.Option("--history", help="A session JSONL file: show its governed history too.")
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="A session id of this directory.")
    ] = None,
    window: Annotated[
        int | None, typer.Option("--window", min=256, help="Override the context window.")
    ] = None,
    max_output: Annotated[
        int | None, typer.Option("--max-output", min=0, help="Override max output tokens.")
    ] = None,
    channel: Annotated[
        str, typer.Option("--channel", help="Channel the identity layer renders for.")
    ] = "tui",
    no_mcp: Annotated[bool, typer.Option("--no-mcp", help="Do not connect MCP servers.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Print what the model would see now (system prompt, tokens per layer; with --history or --session
    also the governed history and the governance report). No LLM call."""
    from catbuddy.cli_commands.context_view import build_view

    if history is not None and session is not None:
        raise fail("use either --history or --session, not both", EXIT_USAGE)
    checked_session_id(session, "--session")
    if history is not None and not history.is_file():
        raise fail(f"--history {history}: no such file", EXIT_USAGE)
    workspace, settings = load(ctx, cwd=cwd, model=model, ensure_home=False, warn_untrusted=True)
    view = build_view(
        workspace,
        settings,
        channel=channel,
        history_file=history,
        session_id=session,
        window=window,
        max_output=max_output,
        connect_mcp=not no_mcp,
    )
    typer.echo(json.dumps(view.to_json(), indent=2, ensure_ascii=False) if as_json else view.to_text())
    skip_teardown()


@app.command()
def run(
    ctx: typer.Context,
    prompt: Annotated[
        str | None, typer.Argument(help="The prompt; - or nothing reads standard input.")
    ] = None,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
    trust_project: TrustOption = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON result object at the end.")] = False,
    stream_json: Annotated[
        bool, typer.Option("--stream-json", help="Print every event as a JSON line.")
    ] = False,
    continue_latest: Annotated[
        bool, typer.Option("--continue", "-c", help="Continue the latest session here.")
    ] = False,
    resume: Annotated[
        str | None, typer.Option("--resume", "-r", help="Continue the session with this id.")
    ] = None,
    approvals_from_stdin: Annotated[
        bool,
        typer.Option(
            "--approvals-from-stdin",
            help="With --stream-json: answer approval_request events with JSON lines on standard input.",
        ),
    ] = False,
    dream: Annotated[
        bool, typer.Option("--dream", help="After the turn, let Dream distil pending memory entries.")
    ] = False,
    plan: Annotated[
        bool, typer.Option("--plan", help="Plan mode: only reading tools run; the model ends with a plan.")
    ] = False,
    image: Annotated[
        list[Path] | None,
        typer.Option("--image", help="Attach an image (PNG, JPEG, GIF, WebP) for a model that takes images."),
    ] = None,
) -> None:
    """Run one prompt headless (for scripts and CI). Exit 0 done, 1 failed, 2 bad usage.
    @path in the prompt attaches that file (or folder listing, or image)."""
    from catbuddy.cli_commands.headless import run_headless_sync

    if as_json and stream_json:
        raise fail("use either --json or --stream-json, not both", EXIT_USAGE)
    if approvals_from_stdin and not stream_json:
        raise fail(
            "--approvals-from-stdin needs --stream-json (the requests are events on stdout)", EXIT_USAGE
        )
    if approvals_from_stdin and (prompt is None or prompt == "-"):
        raise fail(
            "with --approvals-from-stdin, pass the prompt as an argument: stdin carries the answers",
            EXIT_USAGE,
        )
    checked_session_id(resume, "--resume")
    if prompt is None or prompt == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise fail("no prompt: pass it as an argument or on standard input", EXIT_USAGE)
        prompt = read_stdin()
    from catbuddy.text import valid_text

    prompt = valid_text(prompt)  # argv carries undecodable bytes as lone surrogates
    if not prompt.strip():
        raise fail("the prompt is empty", EXIT_USAGE)
    workspace, settings = load(
        ctx,
        cwd=cwd,
        model=model,
        base_url=base_url,
        approval=approval,
        sandbox=sandbox,
        trust_project=trust_project,
        warn_untrusted=True,
    )
    images = checked_images(settings, image or [])
    _log_model_calls(workspace)
    fmt = "json" if as_json else "stream-json" if stream_json else "text"
    code = run_headless_sync(
        workspace,
        settings,
        prompt,
        fmt=fmt,
        resume=resume,
        continue_latest=continue_latest,
        approvals_from_stdin=approvals_from_stdin,
        dream=dream,
        plan_mode=plan,
        images=images,
    )
    skip_teardown()  # the session is closed and the output written
    raise typer.Exit(code)


sessions_app = typer.Typer(
    help="This directory's sessions: list them (the default), or show one's compactions.",
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(sessions_app, name="sessions")


@sessions_app.callback(invoke_without_command=True)
def sessions(ctx: typer.Context, cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """List this directory's sessions, newest first."""
    from catbuddy.cli_commands.listing import format_sessions, session_json
    from catbuddy.session.store import SessionStore

    if ctx.invoked_subcommand is not None:
        return
    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    infos = SessionStore(workspace.sessions_dir).list()
    if as_json:
        typer.echo(json.dumps([session_json(info) for info in infos], indent=2, ensure_ascii=False))
    else:
        typer.echo(format_sessions(infos, workspace))


@sessions_app.command("show")
def sessions_show(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="The session id (or a unique prefix of it).")],
    cwd: CwdOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a session's tool calls (how each ended) and compactions (the prose, the user's words, the ledger)."""
    from catbuddy.cli_commands.compactions import format_show, show_session

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    data = show_session(workspace, session_id)
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False) if as_json else format_show(data))


@sessions_app.command("fork")
def sessions_fork(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="The session to fork (or a unique prefix of its id).")],
    at: Annotated[
        str | None, typer.Option("--at", help="Carry the history up to just before this message id.")
    ] = None,
    cwd: CwdOption = None,
) -> None:
    """Start a new session carrying a session's history (up to a message), and print its id."""
    from catbuddy.cli_commands.undo import fork

    workspace, _ = load(ctx, cwd=cwd)
    new_id = fork(workspace, session_id, at)
    typer.echo(f"Forked {session_id} into {new_id}. Continue it with: catbuddy --resume {new_id}")


ForceOption = Annotated[
    bool,
    typer.Option("--force", help="Overwrite files changed since the turn (listed otherwise, and refused)."),
]
UndoSessionOption = Annotated[
    str | None, typer.Option("--session", help="Only this session's turns (default: the latest turn of any).")
]


@app.command()
def undo(
    ctx: typer.Context, session: UndoSessionOption = None, force: ForceOption = False, cwd: CwdOption = None
) -> None:
    """Take back the file changes of the latest turn that made some (again: the one before)."""
    from catbuddy.cli_commands.undo import undo_or_redo

    workspace, settings = load(ctx, cwd=cwd)
    session = checked_session_id(session, "--session", workspace)
    typer.echo(undo_or_redo(workspace, settings, session, redo=False, force=force).text)


@app.command()
def redo(
    ctx: typer.Context, session: UndoSessionOption = None, force: ForceOption = False, cwd: CwdOption = None
) -> None:
    """Put back the file changes the latest undo took back."""
    from catbuddy.cli_commands.undo import undo_or_redo

    workspace, settings = load(ctx, cwd=cwd)
    session = checked_session_id(session, "--session", workspace)
    typer.echo(undo_or_redo(workspace, settings, session, redo=True, force=force).text)


@app.command()
def rewind(
    ctx: typer.Context,
    session: Annotated[str, typer.Option("--session", help="The session to rewind.")],
    to: Annotated[
        str, typer.Option("--to", help="The user message to go back to just before (e.g. m000003).")
    ],
    files_only: Annotated[bool, typer.Option("--files-only", help="Restore the files only.")] = False,
    conversation_only: Annotated[
        bool, typer.Option("--conversation-only", help="Rewind the conversation only.")
    ] = False,
    force: ForceOption = False,
    cwd: CwdOption = None,
) -> None:
    """Go back to just before a user message: its turns' file changes, the conversation, or both."""
    from catbuddy.cli_commands.undo import rewind as rewind_to

    if files_only and conversation_only:
        raise fail(
            "--files-only and --conversation-only exclude each other; give one or neither.", EXIT_USAGE
        )
    workspace, settings = load(ctx, cwd=cwd)
    session = checked_session_id(session, "--session", workspace) or session
    outcome = rewind_to(
        workspace,
        settings,
        session,
        to,
        files=not conversation_only,
        conversation=not files_only,
        force=force,
    )
    typer.echo(outcome.text)


@app.command()
def compact(
    ctx: typer.Context,
    instructions: Annotated[
        list[str] | None, typer.Argument(help="What the summary should focus on.")
    ] = None,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Session id (default: the latest).")
    ] = None,
    undo: Annotated[
        bool, typer.Option("--undo", help="Void the latest compaction instead: its messages come back.")
    ] = False,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Fold a session's older history into a summary now (like /compact in the app); --undo voids the
    latest compaction (like /compact undo). Nothing to do is not a failure: its message, exit 0."""
    from catbuddy.cli_commands.listing import compact_session
    from catbuddy.text import valid_text

    checked_session_id(session, "--session")
    text = valid_text(" ".join(instructions or [])).strip() or None
    if undo and text:
        raise fail("--undo takes no instructions: it voids the latest compaction as it is", EXIT_USAGE)
    workspace, settings = load(
        ctx, cwd=cwd, model=model, base_url=base_url, ensure_home=not undo, warn_untrusted=True
    )
    if not undo:
        _log_model_calls(workspace)
    if undo:
        from catbuddy.cli_commands.compactions import undo_compaction

        outcome, message = undo_compaction(workspace, session)
    else:
        outcome, message = compact_session(workspace, settings, session, text)
    typer.echo(message)
    raise typer.Exit(EXIT_FAILED if outcome == "failed" else EXIT_OK)


@app.command("dream")
def dream_command(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the diff Dream proposes; write nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help='Apply without asking when memory.dream = "ask".')
    ] = False,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Distil the pending memory entries into both MEMORY.md files now (also when Dream is paused)."""
    from catbuddy.cli_commands.memory_commands import ask_on_terminal, dream_json, run_dream

    workspace, settings = load(ctx, cwd=cwd, model=model, base_url=base_url)
    _log_model_calls(workspace)
    code, result, lines = run_dream(
        workspace, settings, dry_run=dry_run, assume_yes=yes, confirm=ask_on_terminal
    )
    typer.echo(json.dumps(dream_json(result), indent=2, ensure_ascii=False) if as_json else "\n".join(lines))
    raise typer.Exit(code)


@memory_app.command("log")
def memory_log(
    ctx: typer.Context,
    cwd: CwdOption = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="Only the newest N changes.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the changes to both MEMORY.md files, newest first: time, source, lines added/removed, sessions."""
    from catbuddy.cli_commands.memory_commands import format_log, log_json

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    if as_json:
        typer.echo(json.dumps(log_json(workspace), indent=2, ensure_ascii=False))
    else:
        typer.echo(format_log(workspace, limit))


@memory_app.command("diff")
def memory_diff(
    ctx: typer.Context,
    change: Annotated[int | None, typer.Argument(help="The change number (default: the newest).")] = None,
    cwd: CwdOption = None,
) -> None:
    """Show what one change did to the memory files, as a unified diff."""
    from catbuddy.cli_commands.memory_commands import VersionError, format_diff

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    try:
        typer.echo(format_diff(workspace, change))
    except VersionError as exc:
        raise fail(str(exc), EXIT_USAGE if change is not None else EXIT_FAILED) from None


@memory_app.command("undo")
def memory_undo(ctx: typer.Context, cwd: CwdOption = None) -> None:
    """Put the memory files back as they were before the newest change (again: the one before)."""
    from catbuddy.cli_commands.memory_commands import undo_last

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    typer.echo(undo_last(workspace))


@app.command()
def skills(ctx: typer.Context, cwd: CwdOption = None) -> None:
    """List the skills catbuddy can see: source, always-on or not, and any problems."""
    from catbuddy.skills.loader import discover_skills, format_skills_table

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    typer.echo(format_skills_table(discover_skills(workspace)))


@app.command()
def agents(ctx: typer.Context, cwd: CwdOption = None) -> None:
    """List the subagents the `task` tool can start (.catbuddy/agents, ~/.catbuddy/agents, shipped) and
    any agent file that could not be used, with the reason."""
    from catbuddy.subagents.catalog import format_agents_table, load_agents

    workspace, _ = load(ctx, cwd=cwd, ensure_home=False)
    typer.echo(format_agents_table(load_agents(workspace)))


@mcp_app.command("list")
def mcp_list(ctx: typer.Context, cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """Connect to the configured MCP servers and show their status and tools."""
    import asyncio

    from catbuddy.mcp.client import McpManager, format_mcp_status

    workspace, settings = load(ctx, cwd=cwd, ensure_home=False, warn_untrusted=True)
    if not settings.mcp_servers:
        typer.echo(
            "No MCP servers configured. Add [mcpServers.<name>] to .catbuddy/config.toml (see the README)."
        )
        return

    async def collect() -> list[Any]:
        manager = McpManager(settings.mcp_servers, workspace.work_root)
        try:
            await manager.start()
            await manager.wait_ready()
            return manager.statuses()
        finally:
            await manager.aclose()

    statuses = asyncio.run(collect())
    if as_json:
        typer.echo(
            json.dumps(
                [s.to_json() if hasattr(s, "to_json") else vars(s) for s in statuses], indent=2, default=str
            )
        )
    else:
        typer.echo(format_mcp_status(statuses))


@app.command()
def doctor(ctx: typer.Context, cwd: CwdOption = None, as_json: JsonOption = False) -> None:
    """What is in force here: the sandbox for exec (and whether it really starts), the exec environment,
    approval, and the project's trust. Exit 1 when something needs fixing."""
    from catbuddy.cli_commands.doctor import diagnose

    workspace, settings = load(ctx, cwd=cwd, ensure_home=False)
    report = diagnose(workspace, settings)
    typer.echo(json.dumps(report.to_json(), indent=2) if as_json else report.to_text())
    raise typer.Exit(EXIT_OK if report.ok else EXIT_FAILED)


@app.command("acp")
def acp_command(
    ctx: typer.Context,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    approval: ApprovalOption = None,
    sandbox: SandboxOption = None,
    trust_project: TrustOption = False,
) -> None:
    """Serve the Agent Client Protocol on standard input/output, for editors (Zed's agent_servers, JetBrains,
    Neovim, Emacs). Each session's work root is the editor's project folder."""
    from catbuddy.acp.server import run_acp

    glob = ctx.obj if isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
    run_acp(
        GlobalOptions(
            model=model or glob.model,
            base_url=base_url or glob.base_url,
            approval=approval or glob.approval,
            sandbox=sandbox or glob.sandbox,
            trust_project=trust_project or glob.trust_project,
        )
    )


class _Teardown:
    """Commands whose work is done, flushed and closed may skip the interpreter's teardown (0.2–0.35 s
    after a run that loaded the SDK): nothing is left to write, so the exit status and output are the
    same. Only the real entry point does this; in-process callers (tests) get a normal SystemExit."""

    skip = False


def skip_teardown() -> None:
    _Teardown.skip = True


def main() -> None:
    code = 0
    try:
        app()
    except SystemExit as exc:
        if not _Teardown.skip:
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if _Teardown.skip:
        exit_now(code)


if __name__ == "__main__":
    main()
