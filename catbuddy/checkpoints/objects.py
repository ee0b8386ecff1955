"""The shadow repository's loose objects, read and written from Python (git's documented object format).

A turn that changed a few known files is captured without running git: their blobs are written as loose
objects and the trees on their paths rewritten from the last snapshot's. Two git processes (``add`` and
``write-tree``, each reading the whole index) cost more than the rest of a turn's checkpoints together.
Anything this module cannot do exactly as git would — an object that is packed, a path whose folder is a
file in the tree — returns None, and the caller lets git do it (docs/architecture.md §15).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zlib
from pathlib import Path

from catbuddy.errors import CatbuddyError

TREE_MODE = b"40000"
REGULAR_MODE = b"100644"
EXECUTABLE_MODE = b"100755"
SYMLINK_MODE = b"120000"
OID_BYTES = 20
MAX_CACHED_TREES = 2_000  # a long session writes a few trees per turn: start over past this many

TreeEntries = dict[bytes, tuple[bytes, bytes]]  # name -> (mode, binary object id)
Change = tuple[bytes, bytes] | None  # (mode, binary blob id), or None: the path is deleted


class NotLoose(CatbuddyError):
    """An object the capture needs is not a loose object here (packed, or missing)."""


class LooseObjects:
    def __init__(self, git_dir: Path) -> None:
        self.objects = git_dir / "objects"
        # Trees read, by id: content-addressed, so never stale; a capture walks the same trees per path.
        self._trees: dict[bytes, TreeEntries] = {}

    def _path(self, oid: bytes) -> Path:
        hexid = oid.hex()
        return self.objects / hexid[:2] / hexid[2:]

    def read(self, oid: bytes) -> tuple[bytes, bytes]:
        """(kind, body) of a loose object."""
        try:
            raw = zlib.decompress(self._path(oid).read_bytes())
        except (OSError, zlib.error):
            raise NotLoose(oid.hex()) from None
        header, _, body = raw.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not size.isdigit() or int(size) != len(body):
            raise NotLoose(oid.hex())
        return kind, body

    def write(self, kind: bytes, body: bytes) -> bytes:
        """Store an object (when it is not stored yet) and return its binary id."""
        raw = kind + b" %d\0" % len(body) + body
        oid = hashlib.sha1(raw, usedforsecurity=False).digest()
        path = self._path(oid)
        if path.exists():
            return oid
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix="tmp_obj_")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(zlib.compress(raw, 1))
            os.chmod(temp, 0o444)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return oid

    def tree(self, oid: bytes) -> TreeEntries:
        """A tree's entries (a copy: the caller may change it)."""
        if oid not in self._trees:
            if len(self._trees) >= MAX_CACHED_TREES:
                self._trees.clear()
            kind, body = self.read(oid)
            if kind != b"tree":
                raise NotLoose(oid.hex())
            self._trees[oid] = parse_tree(body)
        return dict(self._trees[oid])


def parse_tree(body: bytes) -> TreeEntries:
    entries: TreeEntries = {}
    at = 0
    while at < len(body):
        space = body.index(b" ", at)
        nul = body.index(b"\0", space)
        entries[body[space + 1 : nul]] = (body[at:space], body[nul + 1 : nul + 1 + OID_BYTES])
        at = nul + 1 + OID_BYTES
    return entries


def _sort_key(item: tuple[bytes, tuple[bytes, bytes]]) -> bytes:
    name, (mode, _) = item
    return name + b"/" if mode == TREE_MODE else name  # git orders a folder as if its name ended in "/"


def format_tree(entries: TreeEntries) -> bytes:
    return b"".join(mode + b" " + name + b"\0" + oid for name, (mode, oid) in sorted(entries.items(), key=_sort_key))


def updated_tree(store: LooseObjects, root: bytes, changes: dict[bytes, Change]) -> bytes | None:
    """The id of ``root`` with ``changes`` (path, split by "/", to a new entry or None) applied, every new
    tree written; None when a path runs through a file or names a folder (git decides those cases)."""
    try:
        return _apply(store, root, {tuple(path.split(b"/")): change for path, change in changes.items()})
    except _Conflict:
        return None


class _Conflict(CatbuddyError):
    pass


def _apply(store: LooseObjects, oid: bytes | None, changes: dict[tuple[bytes, ...], Change]) -> bytes:
    entries = store.tree(oid) if oid is not None else {}
    below: dict[bytes, dict[tuple[bytes, ...], Change]] = {}
    for parts, change in changes.items():
        if len(parts) > 1:
            below.setdefault(parts[0], {})[parts[1:]] = change
            continue
        current = entries.get(parts[0])
        if current is not None and current[0] == TREE_MODE:
            raise _Conflict  # a file where the tree has a folder
        if change is None:
            entries.pop(parts[0], None)
        else:
            entries[parts[0]] = change
    for name, inner in below.items():
        current = entries.get(name)
        if current is not None and current[0] != TREE_MODE:
            if all(change is None for change in inner.values()):
                continue  # deleting beneath a file: nothing there to delete
            raise _Conflict  # a folder where the tree has a file
        if current is None and all(change is None for change in inner.values()):
            continue  # deleting in a folder the tree does not have
        subtree = _apply(store, current[1] if current is not None else None, inner)
        if subtree == EMPTY_TREE_OID:
            entries.pop(name, None)  # git stores no empty folder
        else:
            entries[name] = (TREE_MODE, subtree)
    return store.write(b"tree", format_tree(entries))


EMPTY_TREE_OID = hashlib.sha1(b"tree 0\0", usedforsecurity=False).digest()


def lookup(store: LooseObjects, root: bytes, path: bytes) -> tuple[bytes, bytes] | None:
    """The (mode, id) of ``path`` in the tree ``root``, or None when it is not there."""
    oid = root
    parts = path.split(b"/")
    for index, name in enumerate(parts):
        entry = store.tree(oid).get(name)
        if entry is None:
            return None
        if index == len(parts) - 1:
            return entry
        if entry[0] != TREE_MODE:
            return None
        oid = entry[1]
    return None
