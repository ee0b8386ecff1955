"""The import graph of catbuddy/: no cycles, and the engine never imports a front end (architecture §1).

Every import counts — module level, inside functions, and under TYPE_CHECKING — because a cycle hidden
behind a lazy import is still two modules that cannot be understood one without the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import catbuddy

PACKAGE = Path(catbuddy.__file__).parent
FRONT_ENDS = ("catbuddy.tui",)
ENGINE = ("catbuddy.agent", "catbuddy.context", "catbuddy.llm", "catbuddy.tools", "catbuddy.session",
          "catbuddy.sandbox", "catbuddy.skills", "catbuddy.mcp", "catbuddy.memory")  # fmt: skip


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


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
