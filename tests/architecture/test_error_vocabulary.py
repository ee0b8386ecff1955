"""One error vocabulary: every exception class defined in catbuddy/ derives from ``CatbuddyError``, which
says what happened and what to do (docs/architecture.md §14)."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

import catbuddy
from catbuddy.errors import CatbuddyError, explain, with_hint

PACKAGE = Path(catbuddy.__file__).parent
BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def modules() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def exception_classes() -> list[tuple[str, type]]:
    """Every class defined at the top level of a catbuddy module that is an exception, by importing it."""
    found = []
    for name, tree in modules():
        module = importlib.import_module(name)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                value = getattr(module, node.name)
                if isinstance(value, type) and issubclass(value, BaseException):
                    found.append((f"{name}.{node.name}", value))
    return found


def test_the_package_defines_the_exception_classes_this_test_looks_at() -> None:
    names = {name for name, _ in exception_classes()}
    assert len(names) >= 30
    assert {"catbuddy.llm.errors.LLMError", "catbuddy.config_checks.ConfigError",
            "catbuddy.session.records.SessionError", "catbuddy.tools.base.ToolError"} <= names  # fmt: skip


@pytest.mark.parametrize(
    ("name", "cls"), exception_classes(), ids=lambda value: getattr(value, "__name__", "")
)
def test_every_exception_class_derives_from_the_root(name: str, cls: type) -> None:
    assert issubclass(cls, CatbuddyError), f"{name} does not derive from catbuddy.errors.CatbuddyError"


def test_no_exception_class_hides_inside_a_function_or_a_class() -> None:
    # Those cannot be imported and checked above; none may derive from a builtin exception directly.
    for name, tree in modules():
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and id(node) not in top:
                bases = {ast.unparse(base) for base in node.bases}
                assert not bases & BUILTIN_EXCEPTIONS, f"{name}.{node.name} derives from {bases}"


def test_a_known_error_is_explained_by_its_message_and_hint() -> None:
    error = CatbuddyError("The session could not be saved.", "Free some space.")
    assert explain(error) == ("The session could not be saved.", "Free some space.")
    assert str(error) == "The session could not be saved. Free some space."


def test_anything_else_is_unexpected() -> None:
    assert explain(KeyError("boom")) == ("Unexpected error: 'boom'", "")
    assert explain(RuntimeError()) == ("Unexpected error: RuntimeError", "")


def test_a_hint_follows_its_message_as_the_next_sentence() -> None:
    assert (
        with_hint("`x` must be an integer", "Did you mean `y`?")
        == "`x` must be an integer. Did you mean `y`?"
    )
    assert with_hint("Cannot connect.", "Check the URL.") == "Cannot connect. Check the URL."
    assert with_hint("no hint", "") == "no hint"


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("catbuddy.config_checks", "ConfigError", ValueError),
        ("catbuddy.session.records", "RecordError", ValueError),
        ("catbuddy.session.store", "SessionWriteError", OSError),
        ("catbuddy.llm.faults", "StallTimeout", TimeoutError),
        ("catbuddy.llm.faults", "MalformedChunk", ValueError),
        ("catbuddy.skills.frontmatter", "FrontmatterError", ValueError),
        ("catbuddy.context.counting.encodings", "TokenizerUnavailable", RuntimeError),
    ],
)
def test_errors_callers_catch_as_a_builtin_still_are_one(module: str, name: str, builtin: type) -> None:
    assert issubclass(getattr(importlib.import_module(module), name), builtin)
