"""The import graph of catbuddy/: no cycles between modules or packages, every package-to-package import
goes down the layers of docs/architecture.md §1, and the engine never imports a front end.

Every import counts — module level, inside functions, and under TYPE_CHECKING — because a cycle hidden
behind a lazy import is still two modules that cannot be understood one without the other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import catbuddy

PACKAGE = Path(catbuddy.__file__).parent
FRONT_ENDS = ("catbuddy.tui", "catbuddy.acp")
ENGINE = ("catbuddy.agent", "catbuddy.context", "catbuddy.llm", "catbuddy.tools", "catbuddy.session",
          "catbuddy.sandbox", "catbuddy.safety", "catbuddy.skills", "catbuddy.mcp", "catbuddy.memory",
          "catbuddy.checkpoints")  # fmt: skip
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
# The layers of catbuddy's top-level packages and modules, highest first: a package imports only from
# layers below its own, never from its own layer or above. docs/architecture.md §1 shows the same table
# (its ```layers block); "__init__" is catbuddy/__init__.py (the version).
# fmt: off
LAYERS = (
    ("__main__",),
    ("cli",),
    ("cli_commands", "acp"),
    ("launch",),
    ("tui",),
    ("agent",),
    ("memory", "mcp", "testing", "mentions", "commands", "hooks"),
    ("tools", "llm"),
    ("context", "safety"),
    ("sandbox", "session", "skills", "subagents", "checkpoints"),
    ("config", "workspace", "logs", "stop_signals"),
    ("trust", "instructions", "markdown_comments", "messages", "model_encodings", "resources",
     "tool_meta", "images"),
    ("config_schema",),
    ("config_checks",),
    ("text", "redact", "errors"),
    ("__init__",),
)
# fmt: on
# The same rule inside a package with subpackages ("." is the package's own modules): its ```sublayers block.
SUBLAYERS = {
    "context": (("governance", "compaction"), ("assembly", "counting")),
    "tui": ((".",), ("screens",), ("widgets",)),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def top_package(module: str) -> str:
    """``catbuddy.X`` for any module under catbuddy/X (a package or a module), ``catbuddy`` for the root."""
    return ".".join(module.split(".")[:2])


def subpackage(module: str) -> str:
    """The package whose folder holds ``module`` (a top-level module stands for itself)."""
    parts = module.split(".")
    if len(parts) <= 2 or (PACKAGE.joinpath(*parts[1:]) / "__init__.py").is_file():
        return module
    return ".".join(parts[:-1])


def package_graph(graph: dict[str, set[str]], node: Callable[[str], str]) -> dict[str, set[str]]:
    """The module graph folded onto packages: an edge for every import from one package into another."""
    folded: dict[str, set[str]] = {node(name): set() for name in graph}
    for name, targets in graph.items():
        folded[node(name)] |= {node(target) for target in targets} - {node(name)}
    return folded


def layer_of() -> dict[str, int]:
    """Every package and top-level module with its layer, and every subpackage with its package's layer
    plus a fraction for its place inside the package (subpackages are ranked only against each other)."""
    layers = {
        ("catbuddy" if name == "__init__" else f"catbuddy.{name}"): float(index)
        for index, names in enumerate(LAYERS)
        for name in names
    }
    for package, inner in SUBLAYERS.items():
        base = layers[f"catbuddy.{package}"]
        for index, names in enumerate(inner):
            for name in names:
                layers[f"catbuddy.{package}" + ("" if name == "." else f".{name}")] = base + index / len(
                    inner
                )
    return layers


def upward_imports(graph: dict[str, set[str]], layers: dict[str, float]) -> list[str]:
    """Every package-to-package import that does not go strictly down the layers."""
    return sorted(
        f"{source} (layer {layers[source]:g}) imports {target} (layer {layers[target]:g})"
        for source, targets in graph.items()
        for target in targets
        if layers[target] <= layers[source]
    )


def documented_block(name: str) -> list[list[str]]:
    """The rows of the ```name block in architecture.md, each a list of words (a `#` starts a comment)."""
    match = re.search(rf"^```{name}\n(.*?)^```", ARCHITECTURE.read_text(encoding="utf-8"), re.M | re.S)
    assert match, f"docs/architecture.md has no ```{name} block"
    rows = [line.split("#")[0].split() for line in match.group(1).splitlines()]
    return [row for row in rows if row]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_there_are_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_engine_never_imports_a_front_end() -> None:
    graph = import_graph()
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith(ENGINE)
        for target in targets
        if target.startswith(FRONT_ENDS)
    )
    assert offenders == []


def test_storage_depends_on_neither_assembly_nor_the_loop() -> None:
    graph = import_graph()
    offenders = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("catbuddy.session")
        for target in targets
        if target.startswith(("catbuddy.context", "catbuddy.agent"))
    )
    assert offenders == []


def test_no_package_imports_a_package_that_imports_it_back() -> None:
    graph = import_graph()
    assert cycles(package_graph(graph, top_package)) == []
    assert cycles(package_graph(graph, subpackage)) == []


def test_every_package_has_a_layer() -> None:
    packages = set(package_graph(import_graph(), top_package)) | set(
        package_graph(import_graph(), subpackage)
    )
    assert sorted(packages - set(layer_of())) == []


def test_every_import_between_packages_goes_down_the_layers() -> None:
    graph = import_graph()
    layers = layer_of()
    assert upward_imports(package_graph(graph, top_package), layers) == []
    inner = {
        source: {target for target in targets if top_package(target) == top_package(source)}
        for source, targets in package_graph(graph, subpackage).items()
    }
    assert upward_imports(inner, layers) == []


def test_the_architecture_document_shows_these_layers() -> None:
    assert documented_block("layers") == [list(names) for names in LAYERS]
    documented = {row[0].rstrip(":"): row[1:] for row in documented_block("sublayers")}
    assert documented == {
        package: " > ".join(" ".join(names) for names in inner).split()
        for package, inner in SUBLAYERS.items()
    }


def test_the_layer_check_finds_an_import_that_goes_up_or_sideways() -> None:
    layers = {"a": 0.0, "b": 1.0, "c": 1.0}
    assert upward_imports({"a": {"b"}, "b": {"c"}, "c": {"a"}}, layers) == [
        "b (layer 1) imports c (layer 1)",
        "c (layer 1) imports a (layer 0)",
    ]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
