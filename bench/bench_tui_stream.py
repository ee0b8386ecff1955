"""What a long streamed reply costs the TUI, beside a bare Textual Markdown stream in the same run.

    python bench/bench_tui_stream.py [--quick]

The scripted server (in this process) streams Markdown at 2,000 characters a second in 30-character
chunks (the issue's 20–40); each side runs in a fresh process (bench/_tui_stream_driver.py) that reads
the stream with the real ``openai`` SDK, headless at 120×40, and reports its own CPU seconds from the
request to the reply fully on screen (the server's CPU is not in it). Rounds interleave the sides, the
order alternating, and figures are medians, so a loaded machine hits both alike:

- one long reply (100,000 characters; 20,000 with --quick): catbuddy against a bare Textual app
  feeding one ``Markdown`` widget through ``Markdown.get_stream``; target ≤ 0.5×;
- the fifth of five replies (20,000 characters each; 4,000 with --quick) in one session against the
  first (after an unmeasured short reply that pays for first-use imports and caches): a reply must
  not cost more because of the transcript above it; target ≤ 1.1×.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import Figure, quick, report  # noqa: E402

from catbuddy.testing.script import Reply  # noqa: E402
from catbuddy.testing.scripted_llm import ScriptedLLM  # noqa: E402

DRIVER = Path(__file__).resolve().parent / "_tui_stream_driver.py"
CHARS_PER_SECOND = 2_000
CHUNK = 30  # characters per streamed delta
LONG_CHARS = 20_000 if quick() else 100_000
REPLY_CHARS = 4_000 if quick() else 20_000
REPLIES = 5
WARM_UP = 1_000  # an unmeasured first reply: the first one imports Markdown, builds caches
ROUNDS = 1 if quick() else 3
TIMEOUT = 900.0

SECTION = """## Section {n}

Some prose with **bold**, *emphasis* and `inline code`, long enough to wrap at 120 columns once or
twice, as a model's explanation does when it walks through a change in some detail.

- a point about the design, with a [link](https://example.com/{n})
- another point, with `code` in it
- a third point that runs on a little longer than the others do

```python
def step_{n}(value: int) -> int:
    # a comment in the code block
    return value * {n} + 1
```

| name | value |
|------|-------|
| a{n} | {n} |

"""


def markdown(chars: int) -> str:
    """A reply of ``chars`` characters: headings, prose, lists, code blocks and tables."""
    parts: list[str] = []
    size, n = 0, 0
    while size < chars:
        n += 1
        part = SECTION.format(n=n)
        parts.append(part)
        size += len(part)
    return "".join(parts)[:chars]


def drive(llm: ScriptedLLM, mode: str, replies: list[str]) -> dict[str, list[float]]:
    llm.push(*(Reply.text(text, chunk_size=CHUNK, delay=CHUNK / CHARS_PER_SECOND) for text in replies))
    args = [sys.executable, str(DRIVER), mode, llm.base_url]
    if mode == "catbuddy":
        args.append(str(len(replies)))
    done = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT)
    if done.returncode != 0:
        raise SystemExit(f"{mode} driver failed ({done.returncode}): {done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for shown, sent in zip(result["chars"], replies, strict=True):
        if shown < len(sent.strip()) * 0.95:
            raise SystemExit(f"{mode}: only {shown:,} of {len(sent):,} characters reached the screen")
    llm.clear_requests()
    return result


def main() -> int:
    long_reply = markdown(LONG_CHARS)
    replies = [markdown(WARM_UP)] + [markdown(REPLY_CHARS) for _ in range(REPLIES)]
    bare: list[float] = []
    ours: list[float] = []
    first: list[float] = []
    fifth: list[float] = []
    with ScriptedLLM([]) as llm:
        for round_ in range(ROUNDS):
            order = ("bare", "catbuddy") if round_ % 2 == 0 else ("catbuddy", "bare")
            for mode in order:
                cpu = drive(llm, mode, [long_reply])["cpu"][0]
                (bare if mode == "bare" else ours).append(cpu)
                print(f"round {round_ + 1}: {mode:<8} {LONG_CHARS:,}-char reply: {cpu:.2f} CPU s", flush=True)
            session = drive(llm, "catbuddy", replies)["cpu"][1:]
            first.append(session[0])
            fifth.append(session[-1])
            listed = " / ".join(f"{value:.2f}" for value in session)
            print(
                f"round {round_ + 1}: catbuddy {REPLIES} × {REPLY_CHARS:,}-char replies: {listed} CPU s",
                flush=True,
            )
    figures = [
        Figure(
            f"TUI CPU for one {LONG_CHARS:,}-char streamed reply",
            statistics.median(ours),
            f"bare Textual Markdown stream (median of {ROUNDS})",
            statistics.median(bare),
            unit="CPU s",
            target=0.5,
        ),
        Figure(
            f"TUI CPU for the fifth {REPLY_CHARS:,}-char reply of a session",
            statistics.median(fifth),
            f"the first reply, same session (median of {ROUNDS})",
            statistics.median(first),
            unit="CPU s",
            target=1.1,
        ),
    ]
    return 0 if report("bench_tui_stream", figures) else 3


if __name__ == "__main__":
    sys.exit(main())
