from __future__ import annotations

from catbuddy.tools.output import HeadTailBuffer


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
