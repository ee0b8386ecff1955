"""The one truncator and the one diff helper every layer uses."""

from __future__ import annotations

from catbuddy.text import fit_middle, truncate_head, truncate_middle, unified_diff


def test_fit_middle_keeps_head_and_tail_within_the_limit_and_counts_the_cut() -> None:
    text = "H" * 100 + "M" * 1000 + "T" * 100
    out = fit_middle(text, 300)
    assert out.startswith("H" * 100) and out.endswith("T" * 100) and len(out) <= 300
    head, marker, tail = out.split("\n")
    assert marker == f"[... {len(text) - len(head) - len(tail):,} characters cut ...]"


def test_short_text_is_untouched() -> None:
    assert fit_middle("abc", 10) == "abc"
    assert truncate_middle("short", 10) == "short"
    assert truncate_head("abc", 10) == "abc"


def test_truncate_middle_keeps_head_and_tail_and_says_why() -> None:
    cut = truncate_middle("abcdefghij", 4, why=" to fit the context window")
    assert cut == "ab\n[... 6 characters cut to fit the context window ...]\nij"


def test_characters_dropped_earlier_are_counted_in_the_marker() -> None:
    assert "[... 500 characters cut ...]" in fit_middle("abcd", 100, already_cut=500)


def test_unified_diff_names_both_sides_and_marks_a_missing_final_newline() -> None:
    diff = unified_diff("a\nb\n", "a\nc", "x.py")
    assert diff.startswith("--- a/x.py\n+++ b/x.py\n")
    assert "-b\n" in diff and "+c\n\\ No newline at end of file\n" in diff
    assert unified_diff("same\n", "same\n", "x.py") == ""
