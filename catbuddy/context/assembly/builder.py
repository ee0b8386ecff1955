"""ContextBuilder: the five-layer system prompt with an mtime fingerprint cache (docs/architecture.md §2).

Layers, in order, joined by a Markdown rule: identity, bootstrap files, memory, skills, runtime.
The built prompt is cached under ``channel + fingerprint``; the fingerprint is made of the mtimes
and sizes of every file that can change the prompt, so a hit reads no file and renders nothing,
and an edit to any of those files shows up in the very next request.

Volatile facts (the time, the channel) never enter the system prompt: they are appended to the
user message as a ``[runtime: …]`` block, so the prompt prefix stays byte-identical and cacheable.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from catbuddy.config import Settings, config_files
from catbuddy.instructions import candidate_paths, instruction_files
from catbuddy.markdown_comments import strip_html_comments
from catbuddy.messages import runtime_block, with_runtime_block
from catbuddy.resources import templates_dir
from catbuddy.workspace import BOOTSTRAP_FILES, Workspace, is_default_memory

LAYER_SEPARATOR = "\n\n---\n\n"
LAYER_NAMES = ("identity", "bootstrap", "memory", "skills", "runtime")
IDENTITY_TEMPLATE = "identity.md.j2"
ASSISTANT_NAME = "catbuddy"
CACHE_LIMIT = 16  # prompts kept per builder (channels × recent fingerprints)

log = logging.getLogger(__name__)


class RuntimeSource(Protocol):
    """Anything that adds lines to the runtime layer (MCP servers, later others)."""

    def runtime_lines(self) -> list[str]: ...

    def runtime_fingerprint(self) -> str: ...


@dataclass(frozen=True)
class LayerPart:
    """One file's section of a layer (its heading included), so reports can show its tokens."""

    label: str
    path: Path
    text: str


@dataclass
class Layer:
    name: str
    text: str
    sources: list[Path] = field(default_factory=list)
    parts: list[LayerPart] = field(default_factory=list)


@dataclass
class BuiltPrompt:
    text: str
    layers: list[Layer]
    channel: str
    warnings: list[str] = field(default_factory=list)  # workspace files skipped, and why
    _layer_tokens: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _part_tokens: dict[str, dict[str, list[int]]] = field(default_factory=dict, repr=False)
    _extended: dict[tuple[tuple[str, str], ...], BuiltPrompt] = field(default_factory=dict, repr=False)

    def extended(self, layers: tuple[tuple[str, str], ...]) -> BuiltPrompt:
        """This prompt with more layers after its own (name, text): a subagent's instructions, plan mode's.
        Kept per prompt, so its token counts are cached like the prompt's own."""
        if not layers:
            return self
        built = self._extended.get(layers)
        if built is None:
            extra = [Layer(name, text) for name, text in layers if text]
            built = BuiltPrompt(
                LAYER_SEPARATOR.join([self.text] + [layer.text for layer in extra]),
                self.layers + extra,
                self.channel,
                list(self.warnings),
            )
            self._extended[layers] = built
        return built

    def layer(self, name: str) -> Layer | None:
        return next((layer for layer in self.layers if layer.name == name), None)

    def layer_tokens(self, encoding_name: str, count_text: Callable[[str], int]) -> dict[str, int]:
        """Tokens per layer, counted once per prompt and encoding (the prompt is cached, so this is too)."""
        sizes = self._layer_tokens.get(encoding_name)
        if sizes is None:
            sizes = self._layer_tokens[encoding_name] = {
                layer.name: count_text(layer.text) for layer in self.layers
            }
        return sizes

    def part_tokens(self, encoding_name: str, count_text: Callable[[str], int]) -> dict[str, list[int]]:
        """Tokens of each file's section per layer (cached like ``layer_tokens``)."""
        key = f"parts:{encoding_name}"
        cached = self._part_tokens.get(key)
        if cached is None:
            cached = self._part_tokens[key] = {
                layer.name: [count_text(part.text) for part in layer.parts] for layer in self.layers
            }
        return cached


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def read_text(path: Path, warnings: list[str] | None = None) -> str:
    """Every file the builder reads goes through here (tests count the calls).

    A missing file is simply absent. One that exists but cannot be read, or is not UTF-8 text, is
    skipped with a warning, added to ``warnings``: the built prompt carries it and the front ends show
    it once (a notice in the app and in `catbuddy run`, a line in `catbuddy context`). Without a
    ``warnings`` list to carry it, it is logged as a warning instead."""
    problem = ""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    except IsADirectoryError:
        problem = "is a directory, not a file"
    except OSError as exc:
        problem = f"cannot be read ({exc.strerror or exc})"
    else:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            problem = f"is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); re-save it as UTF-8"
    warning = f"{path} {problem}; it was left out of the system prompt."
    if warnings is None:
        log.warning("%s", warning)
    else:
        log.info("%s", warning)
        warnings.append(warning)
    return ""


class ContextBuilder:
    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self._clock = clock or (lambda: datetime.now().astimezone())
        self._sources: list[RuntimeSource] = []
        self._cache: dict[tuple[Any, ...], BuiltPrompt] = {}
        self._skill_paths_key: tuple[Any, ...] | None = None
        self._skill_paths: tuple[str, ...] = ()
        # The work root and the user-profile switch are fixed for a builder, so the cache key only
        # needs the file stats; the paths are computed once.
        self._watch_paths = tuple(str(path) for path in self._watched_files())
        self._skill_root_paths = tuple(str(path) for path in self._skill_roots())
        self._jinja: Any = None
        self._warnings: list[str] = []
        self.hits = 0
        self.misses = 0

    # --- sources ------------------------------------------------------------------------------

    def add_runtime_source(self, source: RuntimeSource) -> None:
        self._sources.append(source)

    def remove_runtime_source(self, source: RuntimeSource) -> None:
        if source in self._sources:
            self._sources.remove(source)

    # --- fingerprint --------------------------------------------------------------------------

    def _watched_files(self) -> list[Path]:
        ws = self.workspace
        # Every folder's AGENTS.md and CLAUDE.md from the git root down, existing or not: one appearing
        # later changes its stat from None, and the prompt is rebuilt.
        files = [*candidate_paths(ws.work_root), ws.project_dir / "AGENTS.md"]
        files += [ws.project_dir / name for name in BOOTSTRAP_FILES if name != "AGENTS.md"]
        files += [ws.global_workspace / "USER.md", ws.project_memory, ws.global_memory]
        files += config_files(ws.home, ws.work_root)
        return files

    def _skill_roots(self) -> list[Path]:
        from catbuddy.resources import workspace_defaults_dir

        ws = self.workspace
        return [
            workspace_defaults_dir() / "skills",
            ws.global_skills_dir,
            ws.project_skills_dir,
            ws.agents_skills_dir,
        ]

    def _skill_files(self, roots_key: tuple[Any, ...]) -> tuple[str, ...]:
        # Listing skill folders costs a directory scan; redo it only when a root's mtime changed
        # (a skill folder added or removed). Each SKILL.md is stat'ed every time; other files in a
        # skill folder never reach the prompt.
        if roots_key != self._skill_paths_key:
            paths: list[str] = []
            for root in self._skill_root_paths:
                try:
                    entries = sorted(os.scandir(root), key=lambda e: e.name)
                except OSError:
                    continue
                for entry in entries:
                    if entry.is_dir():
                        paths.append(os.path.join(entry.path, "SKILL.md"))
            self._skill_paths, self._skill_paths_key = tuple(paths), roots_key
        return self._skill_paths

    def fingerprint(self) -> tuple[Any, ...]:
        """Stats only, on paths prepared once as strings: this runs before every request."""
        roots_key = tuple(map(_stat_key, self._skill_root_paths))
        return (
            tuple(map(_stat_key, self._watch_paths)),
            roots_key,
            tuple(map(_stat_key, self._skill_files(roots_key))),
            tuple(source.runtime_fingerprint() for source in self._sources),
        )

    # --- building -----------------------------------------------------------------------------

    def build(self, channel: str = "tui") -> BuiltPrompt:
        key = (channel, self.fingerprint())
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        built = self._assemble(channel)
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = built
        return built

    def system_prompt(self, channel: str = "tui") -> str:
        return self.build(channel).text

    def _assemble(self, channel: str) -> BuiltPrompt:
        self._warnings = []  # filled by read_text while the layers are built
        layers = [
            self._identity_layer(channel),
            self._bootstrap_layer(),
            self._memory_layer(),
            self._skills_layer(),
            self._runtime_layer(),
        ]
        present = [layer for layer in layers if layer.text.strip()]
        text = LAYER_SEPARATOR.join(layer.text for layer in present)
        return BuiltPrompt(text, layers, channel, warnings=self._warnings)

    def _template_env(self) -> Any:
        if self._jinja is None:
            import jinja2

            self._jinja = jinja2.Environment(
                loader=jinja2.FileSystemLoader(str(templates_dir())),
                keep_trailing_newline=False,
                trim_blocks=True,
                lstrip_blocks=True,
                undefined=jinja2.StrictUndefined,
            )
        return self._jinja

    def _identity_layer(self, channel: str) -> Layer:
        template = self._template_env().get_template(IDENTITY_TEMPLATE)
        text = template.render(
            name=ASSISTANT_NAME,
            os=f"{platform.system().lower()} {platform.release()}",
            python_version=platform.python_version(),
            work_root=str(self.workspace.work_root),
            channel=channel,
            executable=sys.executable,
        )
        return Layer("identity", text.strip(), [templates_dir() / IDENTITY_TEMPLATE])

    def _bootstrap_files(self) -> list[tuple[str, Path]]:
        """(heading, path) of each bootstrap file, in prompt order: the instruction files from the git
        root down (or `.catbuddy/AGENTS.md`, or the shipped default, when there are none), then SOUL.md,
        USER.md and TOOLS.md (catbuddy's copy once it exists, else the shipped default)."""
        profile = self.settings.context.global_user_profile
        found = [(f.label, f.path) for f in instruction_files(self.workspace.work_root)]
        files = found or [("AGENTS.md", self.workspace.bootstrap_path("AGENTS.md"))]
        files += [(name, self.workspace.bootstrap_path(name, profile)) for name in BOOTSTRAP_FILES[1:]]
        return files

    def _bootstrap_layer(self) -> Layer:
        parts: list[LayerPart] = []
        for heading, path in self._bootstrap_files():
            content = strip_html_comments(read_text(path, self._warnings)).strip()
            if content:
                parts.append(LayerPart(heading, path, f"## {heading}\n\n{content}"))
        return Layer(
            "bootstrap", "\n\n".join(part.text for part in parts), [part.path for part in parts], parts
        )

    def _memory_layer(self) -> Layer:
        parts: list[str] = []
        sources: list[Path] = []
        for title, path in (
            ("Long-Term Memory (You)", self.workspace.global_memory),
            ("Project Memory", self.workspace.project_memory),
        ):
            content = strip_html_comments(read_text(path, self._warnings)).strip()
            if content and not is_default_memory(content):
                parts.append(f"## {title}\n\n{content}")
                sources.append(path)
        return Layer("memory", "\n\n".join(parts), sources)

    def _skills_layer(self) -> Layer:
        from catbuddy.skills.loader import discover_skills

        catalog = discover_skills(self.workspace)
        parts: list[str] = []
        sources: list[Path] = []
        always = catalog.always_on()
        if always:
            bodies = [f"### {skill.name}\n\n{skill.body.strip()}" for skill in always]
            parts.append("## Always-On Skills\n\n" + "\n\n".join(bodies))
            sources += [skill.path for skill in always]
        on_demand = catalog.on_demand()
        if on_demand:
            lines = [f"- {skill.name}: {skill.description}" for skill in on_demand]
            parts.append(
                "## Available Skills\n\nLoad a skill's instructions with the `skill` tool before using it.\n\n"
                + "\n".join(lines)
            )
            sources += [skill.path for skill in on_demand]
        return Layer("skills", "\n\n".join(parts), sources)

    def _runtime_layer(self) -> Layer:
        lines: list[str] = []
        for source in self._sources:
            lines += source.runtime_lines()
        if not lines:
            return Layer("runtime", "")
        return Layer(
            "runtime", "## Runtime Context\n\nConnected MCP servers and their tools:\n" + "\n".join(lines)
        )

    # --- the user message ---------------------------------------------------------------------

    def runtime_block(self, channel: str) -> str:
        return runtime_block(self._clock().isoformat(timespec="seconds"), channel)

    def user_message(self, text: str, channel: str = "tui") -> dict[str, Any]:
        """The current user message as sent and persisted: the text plus the runtime block."""
        return {"role": "user", "content": with_runtime_block(text, self.runtime_block(channel))}
