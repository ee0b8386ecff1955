"""One fresh process for bench_tui.py: start an app headless, note when it paints, exit.

    python bench/_tui_driver.py bare|catbuddy [SESSION_ID]

Prints one JSON line of time.monotonic() readings (a clock shared by every process on the machine,
so the parent can subtract the moment it spawned this process):

- ``started``: the first line of this script ran (the interpreter is up);
- ``constructed``: the app object exists (its modules are imported);
- ``painted``: the first frame was rendered (a callback after the first refresh);
- ``shown``: catbuddy only — the session (new or resumed) is on screen and painted.

Both apps run the same way (``App.run(headless=True)``, same size) and exit at once after what is
measured. The catbuddy app is built the way the ``catbuddy`` command builds it (``catbuddy.launch``: workspace
and settings from the environment, then ``CatbuddyApp``) and exits the way it does (``os._exit`` once
the session is closed). The bare app is one Static and one TextArea, exiting normally.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import faulthandler  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

SIZE = (120, 40)
POLL = 0.002  # seconds between looks at whether the session is on screen
STUCK_AFTER = 90.0  # seconds: then every thread's stack goes to stderr and the process exits (code 1)


def run_bare() -> dict[str, float]:
    from _bare_app import BareApp  # this script's folder is first on sys.path

    marks: dict[str, float] = {}

    def painted(app: BareApp) -> None:
        marks["painted"] = time.monotonic()
        app.exit()

    app = BareApp(painted)
    marks["constructed"] = time.monotonic()
    app.run(headless=True, size=SIZE)
    return marks


def run_catbuddy(resume: str | None) -> dict[str, float]:
    from catbuddy.launch import GlobalOptions, load_workspace
    from catbuddy.tui.app import CatbuddyApp

    workspace, settings = load_workspace(GlobalOptions())
    marks: dict[str, float] = {}
    app = CatbuddyApp(workspace, settings, resume=resume)
    marks["constructed"] = time.monotonic()

    def shown() -> bool:
        if app.session_id is None or app.loop is None:
            return False
        return bool(app.transcript.blocks)  # resumed messages, or the new session's notice

    def look() -> None:
        if "painted" not in marks and app.first_frame_at is not None:
            marks["painted"] = app.first_frame_at - time.perf_counter() + time.monotonic()
        if shown():
            app.call_after_refresh(done)
        else:
            app.set_timer(POLL, look)

    def done() -> None:
        marks["shown"] = time.monotonic()
        app.exit()

    app.call_later(look)
    app.run(headless=True, size=SIZE)
    return marks


def main() -> None:
    faulthandler.dump_traceback_later(STUCK_AFTER, exit=True)  # a stuck run says where it is stuck
    mode = sys.argv[1]
    marks = run_bare() if mode == "bare" else run_catbuddy(sys.argv[2] if len(sys.argv) > 2 else None)
    marks["started"] = STARTED
    sys.stdout.write(json.dumps(marks) + "\n")
    sys.stdout.flush()
    if mode != "bare":
        sys.stderr.flush()
        os._exit(0)  # as `catbuddy` does once the app has closed the session


if __name__ == "__main__":
    main()
