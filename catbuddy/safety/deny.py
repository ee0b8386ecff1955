"""Deny rules for commands: the second line behind the sandbox, checked on every segment in every mode.

The rules read the parsed command (``shell_parse``), so they see what runs after quotes, variables,
braces, `cd`, `$(echo …)`, wrappers, nested shells, `xargs` and `find -exec` are accounted for; a path is
judged after `..` and symlinks, against every directory the command may run in. A ``Verdict`` says
whether the command is refused outright (``deny``), touches catbuddy's own files and so needs the user's
approval of that call (``protect``), or does something that cannot be determined statically (``dynamic``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from catbuddy.safety.protected import CONFIG, HOME, SESSION, ProtectedPlaces

if TYPE_CHECKING:
    from catbuddy.safety.shell_parse import ParsedCommand, Segment
    from catbuddy.safety.shell_words import Word

SYSTEM_DIRS = frozenset(
    {"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "run",
     "sbin", "srv", "sys", "usr", "var", "snap", "nix", "Applications", "Library", "System", "Users"}
)
TEMP_DIRS = frozenset({"/tmp", "/var/tmp", "/dev/shm"})
BLOCK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop|sr|nbd)")
POWER_COMMANDS = frozenset({"shutdown", "reboot", "halt", "poweroff"})
FORMAT_COMMANDS = re.compile(r"^(mkfs(\..*)?|mke2fs|mkswap|wipefs|mkdosfs|mkntfs|fdisk|sfdisk|parted|blkdiscard)$")
# The classic form, for lines the grammar could not parse; the lookbehind keeps it linear on long words.
FORK_BOMB = re.compile(r"(?<![\w:.])([A-Za-z_:.][\w:.]*)\s*\(\)\s*\{[^}]*\1\s*\|\s*&?\s*\1\s*&")
RECURSIVE_MODE = frozenset({"chmod", "chown", "chgrp", "setfacl", "chattr"})
# What a command does to the paths it is given: deletes (or moves away), or writes.
DELETING = frozenset({"rm", "rmdir", "unlink", "shred", "mv", "srm", "trash", "trash-put", "gio"})
WRITING = frozenset({"tee", "truncate", "touch", "chmod", "chown", "chgrp", "mkdir", "ln", "setfacl", "chattr"})
DESTINATION = frozenset({"cp", "install", "rsync", "mv", "ln", "scp"})
IN_PLACE = frozenset({"sed", "perl", "ruby"})  # only with -i
DYNAMIC_TARGETS = DELETING | RECURSIVE_MODE | {"dd", "truncate", "find"}
PATH_COMMANDS = DELETING | WRITING | DESTINATION | IN_PLACE | RECURSIVE_MODE | {"dd", "find"}
MAX_CHECKED_PATHS = 1000  # paths one command may name before it is refused rather than checked slowly


@dataclass
class Verdict:
    parsed: ParsedCommand
    deny: str | None = None  # refused in every mode
    protect: str | None = None  # writes catbuddy's own files: the user approves each call
    dynamic: list[str] = field(default_factory=list)  # why the effect cannot be determined statically


class CommandChecker:
    """Built-in and configured deny rules for exec, applied to each simple command."""

    def __init__(
        self, extra_patterns: Iterable[str] = (), home: Path | None = None, work_root: Path | None = None
    ) -> None:
        self.extra: list[re.Pattern[str]] = []
        for pattern in extra_patterns:
            try:
                self.extra.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"tools.deny_patterns: {pattern!r} is not a valid regex ({exc})") from None
        self.work_root = Path(os.path.normpath((work_root or Path.cwd()).absolute()))
        self.user_home = str(Path.home())
        self.places = ProtectedPlaces.of(home, self.work_root)

    def check(self, command: str, _depth: int = 0) -> Verdict:
        # Imported at the first check, not with the policy: the shell grammar costs ~35 ms at start-up.
        from catbuddy.safety.shell_parse import parse_command

        parsed = parse_command(command, home=self.user_home, cwd=str(self.work_root))
        verdict = Verdict(parsed, dynamic=parsed.dynamic_reasons())
        if parsed.fork_bomb or FORK_BOMB.search(command):
            verdict.deny = "a fork bomb"
            return verdict
        for segment in parsed.segments:
            reason = self.segment_reason(segment, verdict, _depth)
            if reason:
                verdict.deny = reason
                return verdict
        verdict.dynamic = list(dict.fromkeys(verdict.dynamic))
        return verdict

    # --- one segment ------------------------------------------------------------------------------

    def segment_reason(self, seg: Segment, verdict: Verdict, depth: int = 0) -> str | None:
        for name in sorted(seg.names) or [""]:
            reason = self._rules(name, seg, verdict)
            if reason:
                return reason
        if seg.inline_code and depth < 2:
            reason = self._inline_code(seg.inline_code, verdict, depth)
            if reason:
                return reason
        for text in seg.text_variants():
            for pattern in self.extra:
                if pattern.search(text):
                    return f"matches the configured deny pattern {pattern.pattern!r}"
        return None

    def _rules(self, name: str, seg: Segment, verdict: Verdict) -> str | None:
        options, operands = _split(seg.args)
        if name in PATH_COMMANDS and len(set(operands)) * len(seg.cwds or (1,)) > MAX_CHECKED_PATHS:
            return f"`{name}` is given more than {MAX_CHECKED_PATHS} paths to check; split it into smaller commands"
        flags = "".join(o[1:] for o in options if not o.startswith("--"))
        recursive = "r" in flags or "R" in flags or "--recursive" in options or "find -exec" in seg.wrappers
        if name == "rm" and "--no-preserve-root" in options:
            return "rm --no-preserve-root"
        if name in DYNAMIC_TARGETS and any(w.dynamic for w in seg.args):
            verdict.dynamic.append(f"`{name}` is given a path only known when it runs")
        if name in DYNAMIC_TARGETS and seg.cwds is None and any(not o.startswith("/") for o in operands):
            verdict.dynamic.append(f"`{name}` runs in a directory only known when it runs")
        if (name == "rm" and recursive) or (name in RECURSIVE_MODE and recursive):
            target = self._dangerous(seg, operands)
            if target:
                what = "recursive rm" if name == "rm" else f"recursive {name}"
                return f"{what} of {target}"
        if name == "mv":
            target = self._dangerous(seg, operands[:-1] if len(operands) > 1 else operands)
            if target:
                return f"moving {target} away"
            if operands and len(operands) > 1 and operands[-1].startswith("/dev/"):
                return f"replacing the device file {operands[-1]}"
        if name == "find" and self._find_destroys(seg):
            return f"find deleting or running commands over {self._dangerous(seg, _find_roots(seg))}"
        if name == "rsync" and any(o.startswith("--delete") for o in options) and operands:
            target = self._dangerous(seg, operands[-1:])
            if target:
                return f"rsync --delete into {target}"
        if FORMAT_COMMANDS.match(name):
            return f"formatting or partitioning a disk ({name})"
        if name in POWER_COMMANDS or (name == "systemctl" and set(operands) & {*POWER_COMMANDS, "kexec"}):
            return f"{name}: shutting down or rebooting the machine"
        if name in ("init", "telinit") and operands[:1] in (["0"], ["6"]):
            return "init 0/6: shutting down the machine"
        if name == "kill" and {"-1", "1"} & set(_kill_targets(seg.args)):
            return "killing every process (or init)"
        if name == "dd" and any(a.startswith("of=") and BLOCK_DEVICE.match(a[3:]) for a in operands):
            return "dd onto a block device"
        if name in ("tee", "shred", "truncate", "cp") and any(BLOCK_DEVICE.match(t) for t in operands):
            return f"{name} onto a block device"
        for op, written in seg.redirects:
            if ">" in op and any(BLOCK_DEVICE.match(v) for v in written.values):
                return f"writing to the block device {written.values[0]}"
        return self._own_files(name, seg, options, operands, verdict)

    def _own_files(
        self, name: str, seg: Segment, options: list[str], operands: list[str], verdict: Verdict
    ) -> str | None:
        """Session files: refused. catbuddy's configuration and state: the user approves the call."""
        writes: list[str] = [v for op, t in seg.redirects if ">" in op for v in t.values]
        deletes: list[str] = []
        if name in DELETING:
            deletes += operands if name != "mv" else operands[:-1] or operands
        if name in WRITING:
            writes += operands
        if name in DESTINATION and operands:
            writes.append(operands[-1])
            if name == "rsync" and any(o.startswith("--delete") for o in options):
                deletes.append(operands[-1])
        if name in IN_PLACE and any(o.startswith("-i") or o == "--in-place" for o in options):
            writes += operands
        if name == "dd":
            writes += [a[3:] for a in operands if a.startswith("of=")]
        filtered: list[str] = []  # find deletes what matches under its roots, not the roots' ancestors
        if name == "find" and ({"-delete"} | _EXEC) & set(options):
            filtered += _find_roots(seg)
        for path in self._paths(seg, filtered):
            if self.places.holds_sessions(path):
                return "changing or deleting catbuddy's session files"
            if self.places.classify(path) in (CONFIG, HOME) and verdict.protect is None:
                verdict.protect = f"it deletes catbuddy's own files ({path})"
        for path in self._paths(seg, deletes):
            if self.places.holds_sessions(path):
                return "changing or deleting catbuddy's session files"
            if self.places.holds_protected(path) and verdict.protect is None:
                verdict.protect = f"it deletes or moves catbuddy's own files ({path})"
        for path in self._paths(seg, writes):
            kind = self.places.classify(path)
            if kind == SESSION:
                return "writing to catbuddy's session files"
            if kind in (CONFIG, HOME) and verdict.protect is None:
                verdict.protect = f"it writes catbuddy's own {'configuration' if kind == CONFIG else 'files'} ({path})"
        return None

    def _inline_code(self, code: str, verdict: Verdict, depth: int) -> str | None:
        from catbuddy.safety import code_scan  # only code inside a command is scanned

        for target in code_scan.destructive_targets(code, self.user_home):
            path = self._absolute(target, self.work_root)
            if path is not None and (self._is_dangerous(path, False) or self.places.holds_sessions(path)):
                return f"code that deletes {path}"
        for line in code_scan.shell_strings(code):
            inner = self.check(line, depth + 1)
            if inner.deny:
                return f"code that runs `{line[:60]}` ({inner.deny})"
            verdict.protect = verdict.protect or inner.protect
        return None

    # --- paths ------------------------------------------------------------------------------------

    def _paths(self, seg: Segment, values: Iterable[str]) -> list[Path]:
        out: list[Path] = []
        for value in dict.fromkeys(values):
            prefix = re.split(r"[*?\[]", value, maxsplit=1)[0] or ("." if value else "")
            for cwd in sorted(seg.cwds or {str(self.work_root)}):
                path = self._absolute(prefix, Path(cwd))
                if path is not None:
                    out.append(path)
        return out

    def _absolute(self, value: str, cwd: Path) -> Path | None:
        from catbuddy.safety.shell_words import DYNAMIC_PART  # loaded by check() already

        if not value or value == DYNAMIC_PART:
            return None
        if value == "~" or value.startswith("~/"):
            value = self.user_home + value[1:]
        path = Path(value) if value.startswith("/") else cwd / value
        # POSIX keeps a leading `//` as written (`os.path.normpath("//")` is "//"); Linux reads it as `/`
        return Path(re.sub(r"^/+", "/", os.path.normpath(path)))

    def _dangerous(self, seg: Segment, operands: list[str]) -> str | None:
        for value in operands:
            globbed = bool(re.search(r"[*?\[]", value))
            prefix = re.split(r"[*?\[]", value, maxsplit=1)[0]
            for cwd in sorted(seg.cwds or {str(self.work_root)}):
                path = self._absolute(prefix or ".", Path(cwd))
                if path is None:
                    continue
                if globbed and not prefix.endswith("/") and prefix:
                    path = path.parent  # `/us*` matches entries of `/`
                if self._is_dangerous(path, globbed):
                    return str(path) + ("/*" if globbed and str(path) != "/" else "*" if globbed else "")
        return None

    def _is_dangerous(self, path: Path, globbed: bool) -> bool:
        """`/`, a top-level or system directory, the home directory or an ancestor of it or of the work
        root: never the target of a recursive delete, chmod or move."""
        text = str(path)
        if text == "/":
            return True
        home = Path(self.user_home)
        root = self.work_root
        if path == root or path.is_relative_to(root):
            return False
        if path == home or home.is_relative_to(path):
            return True
        if root.is_relative_to(path):
            return True
        if path.is_relative_to(home) or text in TEMP_DIRS or path.parent.as_posix() in TEMP_DIRS:
            return False
        parts = path.parts[1:]
        if len(parts) == 1:
            return True
        return len(parts) == 2 and parts[0] in SYSTEM_DIRS

    def _find_destroys(self, seg: Segment) -> bool:
        values = {v for w in seg.args for v in w.values}
        if not ({"-delete"} | _EXEC) & values:
            return False
        return self._dangerous(seg, _find_roots(seg)) is not None


_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _split(args: list[Word]) -> tuple[list[str], list[str]]:
    """Options and operands, over every value each word may take; after `--` everything is an operand."""
    options: list[str] = []
    operands: list[str] = []
    ended = False
    for word in args:
        if word.static == "--" and not ended:
            ended = True
            continue
        for value in word.values:
            if not ended and value.startswith("-") and value != "-":
                options.append(value)
            else:
                operands.append(value)
    return options, operands


def _find_roots(seg: Segment) -> list[str]:
    roots: list[str] = []
    for word in seg.args:
        if word.static is not None and (word.static.startswith("-") or word.static in ("(", "!")):
            break
        roots.extend(word.values)
    return roots or ["."]


def _kill_targets(args: list[Word]) -> list[str]:
    targets: list[str] = []
    skip = False
    ended = False
    for word in args:
        value = word.static or ""
        if skip:
            skip = False
            continue
        if not ended and value in ("-s", "-n", "--signal"):
            skip = True
            continue
        if value == "--":
            ended = True
            continue
        if not ended and value.startswith("-") and not re.fullmatch(r"-\d+", value):
            continue
        if not ended and re.fullmatch(r"-\d+", value) and not targets and value != "-1":
            continue  # `kill -9 PID`: the signal
        targets.append(value)
    return targets
