"""The root of every error catbuddy defines (docs/architecture.md §14).

A ``CatbuddyError`` says what happened (``message``) and what the user can do about it (``hint``), and the
exit status a command ends with when it stops on it. Front ends catch the root once: a turn shows message
and hint, a command prints ``catbuddy: <message> <hint>``. Anything else that escapes is a bug, shown as
"Unexpected error". Errors that callers also catch as a builtin (``ValueError``, ``OSError``,
``TimeoutError`` …) derive from that builtin too.
"""

from __future__ import annotations

EXIT_FAILED = 1  # the command ran and failed
EXIT_USAGE = 2  # the command was asked for something that cannot be (bad input, unknown session …)
_SENTENCE_ENDS = (".", "!", "?", ":", ";")


class CatbuddyError(Exception):
    """A problem catbuddy knows how to explain. ``str()`` is the message followed by the hint."""

    exit_code: int = EXIT_FAILED

    def __init__(self, message: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return with_hint(self.message, self.hint)


def with_hint(message: str, hint: str) -> str:
    """One line: the message, then the hint as the next sentence."""
    if not hint:
        return message
    return f"{message}{'' if message.rstrip().endswith(_SENTENCE_ENDS) else '.'} {hint}"


def explain(exc: BaseException) -> tuple[str, str]:
    """The message and hint the user sees for ``exc``. Only what catbuddy does not know is "Unexpected";
    the caller logs its traceback."""
    if isinstance(exc, CatbuddyError):
        return exc.message or type(exc).__name__, exc.hint
    return f"Unexpected error: {str(exc) or type(exc).__name__}", ""
