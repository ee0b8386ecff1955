"""`sed` scripts: which only print (`p`, `d`, `=`, `s///` without `e`/`w`), which write or run a shell."""

from __future__ import annotations

import re

from catbuddy.safety.readonly_base import READ, Effect, Ruling, short_letters

SED_FLAGS = "nErsuz"  # -n, -E/-r, -s, -u, -z: change how it reads or prints, never what it writes
SED_LONG = frozenset(
    {
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--posix",
        "--debug",
        "--sandbox",
    }
)
# A script command that only prints or edits the text in the pattern space (not `e`, `w`, `r`, `W`, `R`).
_SED_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*)"
_SED_RANGE = rf"(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*"
_SED_SIMPLE = re.compile(rf"{_SED_RANGE}(?:[pPlL=dDnNgGhHxz]|[qQ]\s*\d*)\s*")
_SED_SUBSTITUTE = re.compile(rf"{_SED_RANGE}(?P<command>[sy])(?P<delimiter>.)", re.S)
SED_SAFE_S_FLAGS = re.compile(r"[gpiImM0-9]*")


def _sed_delimited(script: str, start: int, delimiter: str, parts: int) -> int | None:
    """The index after ``parts`` delimited parts of an `s`/`y` command, None when unterminated."""
    i = start
    for _ in range(parts):
        while i < len(script) and script[i] != delimiter:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return None
        i += 1
    return i


def sed_script_effect(script: str) -> Ruling:
    """Whether a sed script only prints: addresses with `p`, `d`, `=`, `q`…, and `s`/`y` without the `e`
    (run a shell) and `w` (write a file) flags. Anything else is not read-only."""
    i = 0
    while i < len(script):
        if script[i] in " \t\n;":
            i += 1
            continue
        simple = _SED_SIMPLE.match(script, i)
        substitute = _SED_SUBSTITUTE.match(script, i)
        if substitute is not None:
            delimiter = substitute.group("delimiter")
            end = _sed_delimited(script, substitute.end(), delimiter, 2)
            if end is None or delimiter in "\n\\":
                return Ruling(Effect.EXEC, "a sed script catbuddy cannot read")
            if substitute.group("command") == "s":
                flags = SED_SAFE_S_FLAGS.match(script, end)
                end = flags.end() if flags else end
                if end < len(script) and script[end] == "e":
                    return Ruling(Effect.EXEC, "the sed `e` flag runs a shell command")
                if end < len(script) and script[end] == "w":
                    return Ruling(Effect.WRITE, "the sed `w` flag writes a file")
            i = end
        elif simple is not None and simple.end() > i:
            i = simple.end()
        else:
            command = script[i:].lstrip("0123456789$,/ !")[:1]
            if command in ("e",):
                return Ruling(Effect.EXEC, "the sed `e` command runs a shell command")
            if command in ("w", "W"):
                return Ruling(Effect.WRITE, "the sed `w` command writes a file")
            return Ruling(Effect.EXEC, f"a sed script catbuddy cannot read ({script[i : i + 20]!r})")
        if i < len(script) and script[i] not in " \t\n;}":
            return Ruling(Effect.EXEC, f"a sed script catbuddy cannot read ({script[i : i + 20]!r})")
    return READ


def sed_rule(args: list[str]) -> Ruling:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-i", "--in-place") or arg.startswith(("--in-place=", "-i")) and not arg.startswith("-i="):
            return Ruling(Effect.WRITE, "`sed -i` edits files in place")
        if arg in ("-f", "--file") or arg.startswith("--file="):
            return Ruling(Effect.EXEC, "`sed -f` runs a script catbuddy cannot see")
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg == "--expression":
            scripts.append(args[i + 1] if i + 1 < len(args) else "")
            i += 1
        elif arg in SED_LONG or arg.startswith(("--line-length=",)):
            pass
        elif arg.startswith("-") and arg != "-" and not arg.startswith("--"):
            letters = short_letters(arg, "elf")
            if set(letters) - set(SED_FLAGS + "el"):
                bad = sorted(set(letters) - set(SED_FLAGS + "el"))[0]
                if bad == "i":
                    return Ruling(Effect.WRITE, "`sed -i` edits files in place")
                return Ruling(Effect.EXEC, f"`sed -{bad}` is not a flag catbuddy knows to be read-only")
            if letters.endswith("e"):
                rest = arg[1 + len(letters) :]
                scripts.append(rest if rest else (args[i + 1] if i + 1 < len(args) else ""))
                i += 0 if rest else 1
            elif letters.endswith("l") and len(arg) == 1 + len(letters):
                i += 1
        elif arg.startswith("--"):
            return Ruling(Effect.EXEC, f"`sed {arg}` is not a flag catbuddy knows to be read-only")
        else:
            operands.append(arg)
        i += 1
    if not scripts and operands:
        scripts.append(operands.pop(0))
    for script in scripts:
        ruling = sed_script_effect(script)
        if ruling.effect is not Effect.READ:
            return ruling
    return READ
