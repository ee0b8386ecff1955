"""The `catbuddy` command (and `python -m catbuddy`).

Plain `catbuddy` (no arguments: the app) and `catbuddy "PROMPT"` (the app with that message sent) start
without typer: building the command-line parser costs ~25 ms of imports before the first frame, for
nothing to parse. Anything else goes to ``catbuddy.cli`` (which also takes options before a prompt).
"""

from __future__ import annotations

import sys

from catbuddy.errors import CatbuddyError
from catbuddy.launch import EXIT_OK, GlobalOptions, exit_now, split_arguments, start_app

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl+C


def main() -> None:
    parsed = split_arguments(sys.argv[1:])
    if parsed.args:
        from catbuddy.cli import main as command_line

        command_line()
        return
    try:
        start_app(GlobalOptions(), first_message=parsed.first_message)
    except CatbuddyError as exc:  # the one handler of catbuddy's errors here, as in cli.py (§14)
        sys.stderr.write(f"catbuddy: {exc}\n")
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:  # Ctrl+C before the app took the terminal
        raise SystemExit(EXIT_INTERRUPTED) from None
    exit_now(EXIT_OK)  # the app has closed the session


if __name__ == "__main__":
    main()
