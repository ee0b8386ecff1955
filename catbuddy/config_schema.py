"""Settings declared once (docs/architecture.md §11).

Every setting is a field of one of config.py's frozen dataclasses, and the field's metadata carries the
rest of its declaration: the check its value must pass, its name in config.toml when that differs from the
attribute, whether a project config needs the user's trust to set it (and what it would let the project
do), the environment variables that set it, and whether the layers' values add up. Fields of ``Settings``
that hold a whole table say so too: a ``[section]``, keys kept at the top level (``sandbox*``), or a table
of named entries (``[models."x"]``, ``[prices."x"]``, ``[mcpServers.x]``).

``Schema.of(Settings)`` reads those declarations once; validation of a layer, the merge of layers, the
building of ``Settings``, the environment variables and the trusted-project rules are all derived from it.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from catbuddy.config_checks import Check, ConfigError

DECLARATION = "catbuddy.config"  # the key of a declaration in a dataclass field's metadata
MISSING: Any = dataclasses.MISSING
_EMPTY_VALUES: tuple[Any, ...] = (False, (), [], {}, "")


@dataclass(frozen=True)
class Setting:
    """One key of config.toml."""

    check: Check
    key: str = ""  # its name in config.toml, when that is not the attribute's
    risky: str = ""  # what a project config setting it could do; not empty: it needs the user's trust
    tightens: tuple[Any, ...] = _EMPTY_VALUES  # values that only tighten: no trust needed for them
    env: tuple[str, ...] = ()  # environment variables that set it (a later one wins)
    additive: bool = False  # every layer's entries apply (a project cannot remove yours)


@dataclass(frozen=True)
class Section:
    """A ``[name]`` table whose keys are the settings of ``cls``."""

    cls: type


@dataclass(frozen=True)
class TopLevel:
    """The settings of ``cls`` are top-level keys of config.toml (their ``key`` names them)."""

    cls: type


@dataclass(frozen=True)
class Entries:
    """A table of named entries, each with the settings of ``cls``: ``[models."gpt-4o"]``."""

    cls: type
    expected: str  # what the table must be, said when it is not a table
    names: tuple[str, ...] = ()  # the keys config.toml may use for it (default: the attribute)
    quoted: bool = True  # entry names shown quoted in errors: models."x".key
    required: str = ""  # what a missing required key must be: "set (an integer)"
    required_hint: str = ""
    complete: tuple[str, ...] = ()  # entries that may leave required keys out (models.default)
    ignored: Mapping[str, Check] = field(default_factory=dict)  # accepted, checked and dropped
    check_entry: Callable[[str, str, dict[str, Any]], None] | None = None  # (source, label, entry)
    build: Callable[[str, dict[str, Any]], Any] | None = None  # (name, entry) → the object; default cls(**)
    risky: str = ""  # what a project config adding entries could do


def setting(
    default: Any,
    check: Check,
    *,
    key: str = "",
    risky: str = "",
    tightens: tuple[Any, ...] = _EMPTY_VALUES,
    env: tuple[str, ...] = (),
    additive: bool = False,
    repr: bool = True,  # noqa: A002 — the name dataclasses.field uses
) -> Any:
    """A dataclass field that is a setting with this default; an empty dict default becomes a factory."""
    declared = {DECLARATION: Setting(check, key, risky, tightens, env, additive)}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=declared, repr=repr)
    return field(default=default, metadata=declared, repr=repr)


def required(check: Check) -> Any:
    """A dataclass field that is a setting every entry must set."""
    return field(metadata={DECLARATION: Setting(check)})


def table(declaration: Section | TopLevel | Entries) -> Any:
    """A field of Settings that holds a whole table; entry tables start empty."""
    if isinstance(declaration, Entries):
        return field(default_factory=dict, metadata={DECLARATION: declaration})
    return field(default_factory=declaration.cls, metadata={DECLARATION: declaration})


@dataclass(frozen=True)
class Declared:
    """A setting as config.toml names it, with where it lands."""

    key: str
    attribute: str
    default: Any  # MISSING: required
    setting: Setting
    holder: str = ""  # the Settings attribute that holds it, for top-level keys of a TopLevel table

    def needs_trust(self, value: Any) -> bool:
        return bool(self.setting.risky) and value not in self.setting.tightens


def declared_settings(cls: type, holder: str = "") -> dict[str, Declared]:
    """The settings a dataclass declares, by their config.toml key, in declaration order."""
    found: dict[str, Declared] = {}
    for item in fields(cls):
        declaration = item.metadata.get(DECLARATION)
        if not isinstance(declaration, Setting):
            continue
        if item.default is not MISSING:
            default = item.default
        elif callable(item.default_factory):
            default = item.default_factory()
        else:
            default = MISSING
        key = declaration.key or item.name
        found[key] = Declared(key, item.name, default, declaration, holder)
    return found


@dataclass(frozen=True)
class EntryTable:
    attribute: str
    declaration: Entries
    settings: dict[str, Declared]

    @property
    def names(self) -> tuple[str, ...]:
        return self.declaration.names or (self.attribute,)

    def validate(self, source: str, key: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise ConfigError(source, key, self.declaration.expected, value)
        return {name: self._entry(source, key, name, spec) for name, spec in value.items()}

    def _entry(self, source: str, key: str, name: str, spec: Any) -> dict[str, Any]:
        declaration = self.declaration
        label = f'{key}."{name}"' if declaration.quoted else f"{key}.{name}"
        checks = {k: d.setting.check for k, d in self.settings.items()} | dict(declaration.ignored)
        checked = check_table(source, f"{label}.", spec, checks)
        for ignored in declaration.ignored:
            checked.pop(ignored, None)
        if name not in declaration.complete:
            for missing in (k for k, d in self.settings.items() if d.default is MISSING and k not in checked):
                raise ConfigError(
                    source, f"{label}.{missing}", declaration.required, hint=declaration.required_hint
                )
        if declaration.check_entry is not None:
            declaration.check_entry(source, label, checked)
        return checked

    def build(self, entries: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        make = self.declaration.build or (lambda _name, spec: self.declaration.cls(**spec))
        return {name: make(name, spec) for name, spec in entries.items()}


@dataclass(frozen=True)
class Schema:
    """Every setting of config.toml, read from the declarations on ``Settings`` and the classes it holds."""

    top: dict[str, Declared]  # top-level keys, those of TopLevel tables included
    sections: dict[str, dict[str, Declared]]  # [section] → its keys
    section_types: dict[str, type]
    top_level_types: dict[str, type]  # Settings attribute → the class its top-level keys build
    entries: dict[str, EntryTable]  # by Settings attribute

    @classmethod
    def of(cls, settings_type: type) -> Schema:
        top = declared_settings(settings_type)
        sections: dict[str, dict[str, Declared]] = {}
        section_types: dict[str, type] = {}
        top_level_types: dict[str, type] = {}
        entries: dict[str, EntryTable] = {}
        for item in fields(settings_type):
            declaration = item.metadata.get(DECLARATION)
            if isinstance(declaration, TopLevel):
                top_level_types[item.name] = declaration.cls
                top.update(declared_settings(declaration.cls, holder=item.name))
            elif isinstance(declaration, Section):
                section_types[item.name] = declaration.cls
                sections[item.name] = declared_settings(declaration.cls)
            elif isinstance(declaration, Entries):
                entries[item.name] = EntryTable(item.name, declaration, declared_settings(declaration.cls))
        return cls(top, sections, section_types, top_level_types, entries)

    # --- one layer --------------------------------------------------------------------------------

    def entry_table(self, key: str) -> EntryTable | None:
        """The entry table config.toml calls ``key`` (``mcpServers`` and ``mcp_servers`` alike)."""
        return next((table for table in self.entries.values() if key in table.names), None)

    def validate(self, source: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """Check one layer (a parsed TOML file, or env/flag values) and return it normalised: sections and
        entry tables under their Settings attribute, top-level keys under their config.toml key."""
        layer: dict[str, Any] = {}
        top_checks = {key: declared.setting.check for key, declared in self.top.items()}
        for key, value in data.items():
            entries = self.entry_table(key)
            if key in self.sections:
                checks = {k: d.setting.check for k, d in self.sections[key].items()}
                layer[key] = check_table(source, f"{key}.", value, checks)
            elif entries is not None:
                layer[entries.attribute] = entries.validate(source, key, value)
            else:
                layer.update(check_table(source, "", {key: value}, top_checks))
        return layer

    # --- layers together --------------------------------------------------------------------------

    def merge(self, base: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
        """``layer`` over ``base``: a table's keys (a section's settings, an entry table's entries) one by
        one, additive settings joined."""
        merged = dict(base)
        for key, value in layer.items():
            if (key in self.sections or key in self.entries) and isinstance(value, dict):
                inner = dict(merged.get(key, {}))
                additive = self.sections.get(key, {})
                for inner_key, inner_value in value.items():
                    inner[inner_key] = self._joined(
                        additive.get(inner_key), inner.get(inner_key), inner_value
                    )
                merged[key] = inner
            else:
                merged[key] = self._joined(self.top.get(key), merged.get(key), value)
        return merged

    @staticmethod
    def _joined(declared: Declared | None, before: Any, value: Any) -> Any:
        if declared is None or not declared.setting.additive:
            return value
        return tuple(dict.fromkeys([*(before or ()), *value]))

    def build(self, merged: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of ``Settings`` for a merged, validated layer."""
        values: dict[str, Any] = {}
        held: dict[str, dict[str, Any]] = {attribute: {} for attribute in self.top_level_types}
        for key, value in merged.items():
            if key in self.sections:
                keys = self.sections[key]
                values[key] = self.section_types[key](**{keys[k].attribute: v for k, v in value.items()})
            elif key in self.entries:
                values[key] = self.entries[key].build(value)
            elif key in self.top:
                declared = self.top[key]
                (held[declared.holder] if declared.holder else values)[declared.attribute] = value
        for attribute, kwargs in held.items():
            values[attribute] = self.top_level_types[attribute](**kwargs)
        return values

    def environment(self) -> dict[str, str]:
        """Environment variable → the top-level key it sets."""
        return {var: key for key, declared in self.top.items() for var in declared.setting.env}

    # --- trusted projects -------------------------------------------------------------------------

    def needs_trust(self, key: str, value: Any, section: str = "") -> bool:
        """Whether a project config setting ``key`` (of ``section``) to ``value`` needs the user's trust."""
        if section:
            declared = self.sections.get(section, {}).get(key)
            return declared is not None and declared.needs_trust(value)
        entries = self.entries.get(key)
        if entries is not None:
            return bool(entries.declaration.risky) and value not in _EMPTY_VALUES
        declared = self.top.get(key)
        return declared is not None and declared.needs_trust(value)

    def effects(self) -> dict[str, str]:
        """What each risky key would let a project do, by its dotted name (``tools.allow_commands``)."""
        found = {key: d.setting.risky for key, d in self.top.items() if d.setting.risky}
        for section, keys in self.sections.items():
            found |= {f"{section}.{key}": d.setting.risky for key, d in keys.items() if d.setting.risky}
        for table in self.entries.values():
            if table.declaration.risky:
                found[table.names[0]] = table.declaration.risky
        return found


def check_table(source: str, prefix: str, table: Any, checks: Mapping[str, Check]) -> dict[str, Any]:
    """Every key of ``table`` known and its value passing its check; the values normalised."""
    if not isinstance(table, dict):
        raise ConfigError(source, prefix.rstrip("."), "a table", table)
    out: dict[str, Any] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if key not in checks:
            close = difflib.get_close_matches(key, list(checks), n=1)
            hint = f"Did you mean `{prefix}{close[0]}`?" if close else "Remove it or check the README."
            raise ConfigError(source, full, "a known setting", hint=f"Unknown key. {hint}")
        out[key] = checks[key](source, full, value)
    return out
