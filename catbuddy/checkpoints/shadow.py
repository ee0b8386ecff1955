"""A shadow git repository of the work tree, under catbuddy's home (never the user's ``.git``).

git runs with ``GIT_DIR`` pointing at catbuddy's own repository and ``GIT_WORK_TREE`` at the work root,
so the user's repository, its index, branches and stash are never read or written, and a project that
is not a git repository works the same. The shadow's index keeps git's stat cache, so a snapshot costs
about one ``git status``: only the files that changed since the last snapshot are hashed. ``.gitignore``d
files are left out (git reads the work tree's ignore files), and so are files over the size cap.

Everything here blocks: callers run it in a thread.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from catbuddy.checkpoints.objects import (
    EMPTY_TREE_OID,
    EXECUTABLE_MODE,
    REGULAR_MODE,
    SYMLINK_MODE,
    Change,
    LooseObjects,
    NotLoose,
    lookup,
    updated_tree,
)
from catbuddy.errors import CatbuddyError

GIT_TIMEOUT = 300  # seconds; a first snapshot of a large tree hashes every file once
IDENTITY = {
    "GIT_AUTHOR_NAME": "catbuddy",
    "GIT_AUTHOR_EMAIL": "checkpoints@catbuddy.invalid",
    "GIT_COMMITTER_NAME": "catbuddy",
    "GIT_COMMITTER_EMAIL": "checkpoints@catbuddy.invalid",
}
MAX_NAMED_PATHS = 200  # more paths than this are looked up in a listing of the whole tree
EMPTY_TREE = EMPTY_TREE_OID.hex()  # git's well-known empty tree
# The shadow stores the files' bytes as they are: no end-of-line conversion, no clean filter (Git LFS
# would store a pointer), no re-encoding, whatever the work tree's .gitattributes ask. The shadow's
# info/attributes outranks every .gitattributes.
RAW_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"
# Paths captured from Python whose entries in the shadow's index are behind the last tree: past this
# many, the next capture lets git stage them (and so brings the index up to date).
MAX_STALE_PATHS = 200
GLOB_CHARACTERS = "*?[\\"


class CheckpointError(CatbuddyError):
    """The shadow repository could not do what was asked (no git, a full disk, a broken repository)."""


class _GitDecides(CatbuddyError):
    """A path the Python capture leaves to git (a folder, a file over the size cap)."""


@dataclass(frozen=True)
class Snapshot:
    tree: str
    skipped: list[str] = field(default_factory=list)  # files over the size cap, left out


@dataclass(frozen=True)
class Entry:
    """A file in a snapshot: its blob id and mode."""

    blob: str
    mode: str


def git_available() -> bool:
    return shutil.which("git") is not None


def blob_id(data: bytes) -> str:
    """The id git gives a blob of these bytes (so a file can be compared with a snapshot cheaply)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class ShadowRepo:
    def __init__(
        self, git_dir: Path, work_root: Path, max_file_bytes: int, exclude: tuple[Path, ...] = ()
    ) -> None:
        self.git_dir = git_dir
        self.work_root = work_root
        self.max_file_bytes = max_file_bytes
        # Folders inside the work root that are never captured nor restored: catbuddy's home when it
        # lives there (sessions, this very repository).
        self.exclude = tuple(p for p in (*exclude, git_dir) if p.is_relative_to(work_root) and p != work_root)
        self._last_tree: str | None = None  # this object's last snapshot
        self.objects = LooseObjects(git_dir)
        # Captured from Python since git last staged them: the index still has their older entries, so
        # a scan lists them until then (they are hashed and compared, not staged, while they match).
        self._stale: set[str] = set()

    # --- running git ------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(IDENTITY)
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.work_root),
            GIT_CONFIG_NOSYSTEM="1",
            LC_ALL="C",
        )
        return env

    def _run(
        self, *args: str, stdin: bytes | None = None, literal: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        # The user's global config may sign commits or run an fsmonitor: neither applies here.
        argv = ["git", "-c", "commit.gpgsign=false", "-c", "core.fsmonitor=false", "-c", "core.quotepath=off"]
        try:
            # Never the user's terminal: git reads what it is given or nothing.
            return subprocess.run(
                [*argv, *args],
                input=stdin if stdin is not None else b"",
                capture_output=True,
                env={**self._env(), "GIT_LITERAL_PATHSPECS": "1" if literal else "0"},
                cwd=self.work_root,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]} failed: {exc}") from None

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = self._run(*args, stdin=stdin)
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {why[-1] if why else f'exit {done.returncode}'}")
        return done.stdout

    def ensure(self) -> None:
        attributes = self.git_dir / "info" / "attributes"
        if (self.git_dir / "HEAD").exists():
            if not attributes.exists():  # made before the shadow kept bytes raw: hash every file again
                attributes.parent.mkdir(parents=True, exist_ok=True)
                attributes.write_text(RAW_ATTRIBUTES, encoding="utf-8")
                (self.git_dir / "index").unlink(missing_ok=True)
            return
        self.git_dir.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q")  # at GIT_DIR, for the work tree GIT_WORK_TREE names
        self.git("config", "core.autocrlf", "false")
        self.git("config", "gc.auto", "0")  # never a surprise repack in the middle of a turn
        # Folders whose mtime did not change are not read again for new files: the scan for untracked
        # files, most of a snapshot's cost on a large tree, shrinks to the folders that changed.
        self.git("config", "core.untrackedCache", "true")
        self.git("config", "index.version", "4")  # a smaller index to read and write on every snapshot
        self.git("config", "core.splitIndex", "true")
        attributes.parent.mkdir(parents=True, exist_ok=True)
        attributes.write_text(RAW_ATTRIBUTES, encoding="utf-8")
        if self.exclude:
            info = self.git_dir / "info"
            with (info / "exclude").open("a", encoding="utf-8", errors="surrogateescape") as handle:
                handle.writelines(
                    "/" + _escape(str(p.relative_to(self.work_root))) + "/\n" for p in self.exclude
                )

    # --- snapshots --------------------------------------------------------------------------------

    def snapshot(self, only: list[str] | None = None) -> Snapshot:
        """The work tree now, as a tree id; the files over the size cap are named, not stored. ``only``:
        the files known to be the only ones changed since the last snapshot (no scan of the tree)."""
        self.ensure()
        if only is not None and self._last_tree is not None:
            fast = self._capture_in_python(only, noted=True)
            if fast is not None:
                return fast
            try:
                return self._capture(only)
            except CheckpointError:  # a noted file git will not add (ignored, never there): scan instead
                self._last_tree = None  # the add may have staged the others: the index moved
        changed = self._changed_paths()
        if not changed and self._last_tree is not None:
            return Snapshot(self._last_tree)  # nothing changed since this object's last snapshot
        fast = self._capture_in_python(changed, noted=False)
        return fast if fast is not None else self._capture(changed)

    def _capture(self, changed: list[str]) -> Snapshot:
        """Let git stage ``changed`` (and the paths captured from Python since) and write the tree."""
        if not changed and not self._stale and self._last_tree is not None:
            return Snapshot(self._last_tree)  # nothing changed since this object's last snapshot
        skipped = self._exclude_large(changed)
        # The paths captured from Python since git last staged: those still there are staged with the
        # rest, those gone leave the index (they may never have been in it: --ignore-unmatch).
        gone = sorted(p for p in self._stale - set(changed) if not os.path.lexists(self.work_root / p))
        if gone:
            spec = b"\0".join(p.encode("utf-8", "surrogateescape") for p in gone) + b"\0"
            self.git(
                "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=spec,
            )  # fmt: skip
        listed = sorted({*changed, *self._stale} - set(skipped) - set(gone))
        if listed:
            spec = b"\0".join(p.encode("utf-8", "surrogateescape") for p in listed) + b"\0"
            self.git(
                "add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul", stdin=spec
            )
        tree = self.git("write-tree").decode().strip()
        self._last_tree, self._stale = tree, set()
        return Snapshot(tree, skipped)

    def _capture_in_python(self, changed: list[str], *, noted: bool) -> Snapshot | None:
        """The last tree with ``changed`` hashed in, written without git; None when git must do it: a
        file over the size cap, a folder, a new file git might not take (ignored, in a nested repository),
        an object that is not loose, or too many paths behind in the index already. A scan's list
        (``noted`` False) is git's own, so its new files are ones git takes."""
        last = self._last_tree
        if last is None or len(self._stale) + len(changed) > MAX_STALE_PATHS:
            return None
        root = bytes.fromhex(last)
        try:
            names = {relative: relative.encode("utf-8", "surrogateescape") for relative in changed}
            new = [r for r, name in names.items() if lookup(self.objects, root, name) is None]
            present = [r for r in new if os.path.lexists(self.work_root / r)]
            if noted and present and not self._git_would_take(present):
                return None
            changes = {names[relative]: self._entry_now(relative) for relative in changed}
            tree = updated_tree(self.objects, root, changes)
        except (NotLoose, _GitDecides, OSError):
            return None
        if tree is None:
            return None
        self._last_tree = tree.hex()
        self._stale.update(changed)
        return Snapshot(self._last_tree)

    def _git_would_take(self, paths: list[str]) -> bool:
        """Whether a scan would list each of these files: none ignored (the user's ignore files or the
        shadow's exclusions), none inside a nested repository."""
        for relative in paths:
            path = self.work_root / relative
            if any(path.is_relative_to(p) for p in self.exclude):
                return False
            folder = path.parent
            while folder != self.work_root and folder.is_relative_to(self.work_root):
                if (folder / ".git").exists():
                    return False
                folder = folder.parent
        if not paths:
            return True
        if any(p.startswith(":") or any(c in p for c in GLOB_CHARACTERS) for p in paths):
            return False  # check-ignore takes no literal pathspecs: such a name is git's to judge
        spec = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        done = self._run("check-ignore", "--no-index", "-z", "--stdin", stdin=spec, literal=False)
        return done.returncode == 1 and not done.stdout  # 1: none of them is ignored

    def _entry_now(self, relative: str) -> Change:
        """The work tree's entry for ``relative`` now: (mode, blob id), the blob written as a loose object;
        None when it is gone. Raises _GitDecides for a folder or a file over the size cap."""
        path = self.work_root / relative
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            return SYMLINK_MODE, self.objects.write(b"blob", os.readlink(bytes(path)))
        if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_file_bytes:
            raise _GitDecides(relative)
        mode = EXECUTABLE_MODE if info.st_mode & stat.S_IXUSR else REGULAR_MODE
        return mode, self.objects.write(b"blob", path.read_bytes())

    def _changed_paths(self) -> list[str]:
        """Files that differ from the shadow's index (by git's stat cache) and files it does not have
        yet, ignored ones left out; a nested repository ("sub/") is skipped."""
        out = self.git("ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard")
        paths = dict.fromkeys(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)
        return [p for p in paths if not p.endswith("/")]

    def _exclude_large(self, paths: list[str]) -> list[str]:
        large = []
        for relative in paths:
            try:
                size = (self.work_root / relative).lstat().st_size
            except OSError:
                continue  # deleted: git add records the deletion
            if size > self.max_file_bytes:
                large.append(relative)
        if large:
            exclude = self.git_dir / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8", errors="surrogateescape") as handle:
                handle.writelines("/" + _escape(p) + "\n" for p in large)
            spec = b"\0".join(p.encode("utf-8", "surrogateescape") for p in large) + b"\0"
            self.git(
                "rm", "-q", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=spec,
            )  # fmt: skip
        return large

    # --- reading snapshots ------------------------------------------------------------------------

    def changed_between(self, old: str, new: str) -> list[str]:
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def entries(self, tree: str, paths: list[str]) -> dict[str, Entry]:
        if not paths or tree == EMPTY_TREE:
            return {}
        wanted = set(paths)
        named = paths if len(paths) <= MAX_NAMED_PATHS else []  # few: named; many: the whole tree
        out = self.git("ls-tree", "-r", "-z", "--full-tree", tree, "--", *named)
        found: dict[str, Entry] = {}
        for item in out.split(b"\0"):
            if not item:
                continue
            head, _, name = item.partition(b"\t")
            mode, kind, blob = head.decode().split(" ")
            path = name.decode("utf-8", "surrogateescape")
            if kind == "blob" and path in wanted:  # a nested repository's commit is not ours to restore
                found[path] = Entry(blob, mode)
        return found

    def blobs(self, ids: list[str]) -> dict[str, bytes]:
        if not ids:
            return {}
        out = self.git("cat-file", "--batch", stdin="".join(i + "\n" for i in ids).encode())
        found: dict[str, bytes] = {}
        at = 0
        for blob in ids:
            end = out.index(b"\n", at)
            header = out[at:end].split(b" ")
            size = int(header[2])
            found[blob] = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        return found

    def current_id(self, relative: str) -> str | None:
        """The blob id of the work tree's file now; None when it is not a regular file there."""
        path = self.work_root / relative
        try:
            if path.is_symlink():
                return blob_id(os.readlink(path).encode("utf-8", "surrogateescape"))
            if not path.is_file():
                return None
            return blob_id(path.read_bytes())
        except OSError:
            return None

    def restore(self, tree: str, paths: list[str]) -> None:
        """Put ``paths`` back as ``tree`` has them: written, or deleted when the tree lacks them."""
        entries = self.entries(tree, paths)
        contents = self.blobs(sorted({e.blob for e in entries.values()}))
        for relative in paths:
            path = self.work_root / relative
            entry = entries.get(relative)
            try:
                if entry is None:
                    if path.is_symlink() or path.is_file():
                        path.unlink()
                        _prune_empty_parents(path.parent, self.work_root)
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.is_symlink() or (path.exists() and entry.mode == "120000"):
                    path.unlink()
                if entry.mode == "120000":
                    os.symlink(contents[entry.blob].decode("utf-8", "surrogateescape"), path)
                    continue
                path.write_bytes(contents[entry.blob])
                os.chmod(path, 0o755 if entry.mode == "100755" else 0o644)
            except OSError as exc:
                raise CheckpointError(f"cannot restore {relative}: {exc.strerror or exc}") from None


def _escape(path: str) -> str:
    """A path as a literal gitignore pattern."""
    return "".join("\\" + c if c in "*?[]\\!# " else c for c in path)


def _prune_empty_parents(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
