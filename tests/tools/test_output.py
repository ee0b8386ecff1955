from __future__ import annotations

from catbuddy.tools.output import HeadTailBuffer, truncate_head, truncate_middle


def test_truncate_middle_keeps_head_and_tail_and_counts_the_cut() -> None:
    text = "H" * 100 + "M" * 1000 + "T" * 100
    out = truncate_middle(text, 300)
    assert out.startswith("H" * 100) and out.endswith("T" * 100) and len(out) <= 300
    head, marker, tail = out.split("\n")
    assert marker == f"[... {len(text) - len(head) - len(tail):,} characters cut ...]"


def test_short_text_is_untouched() -> None:
    assert truncate_middle("abc", 10) == "abc"
    assert truncate_head("abc", 10) == "abc"


def test_head_tail_buffer_drops_the_middle_of_a_huge_stream() -> None:
    buffer = HeadTailBuffer(limit=1000)
    buffer.feed(b"A" * 400)
    for _ in range(100):
        buffer.feed(b"m" * 100)
    buffer.feed(b"Z" * 400)
    assert buffer.dropped == 400 + 100 * 100 + 400 - 1000
    out = buffer.text(10_000)
    assert out.startswith("A" * 400) and out.endswith("Z" * 400)
    assert f"[... {buffer.dropped:,} characters cut ...]" in out
