from __future__ import annotations

from catbuddy.tools.html_to_markdown import html_to_markdown


def test_headings_paragraphs_and_inline_marks() -> None:
    html = "<h1>Title</h1><p>Some <strong>bold</strong>, <em>soft</em> and <code>x()</code>.</p><p>Next</p>"
    assert html_to_markdown(html) == "# Title\n\nSome **bold**, *soft* and `x()`.\n\nNext"


def test_links_and_images_are_made_absolute() -> None:
    html = '<p><a href="/a">A</a> <a href="b.html">B</a> <img src="i.png" alt="pic"></p>'
    assert html_to_markdown(html, "https://x.org/dir/page") == (
        "[A](https://x.org/a) [B](https://x.org/dir/b.html) ![pic](https://x.org/dir/i.png)"
    )


def test_nested_lists_with_unclosed_items() -> None:
    html = "<ul><li>one<li>two<ol start=3><li>x<li>y</ol></li><li>three</ul>"
    assert html_to_markdown(html) == "- one\n- two\n  3. x\n  4. y\n- three"


def test_pre_blocks_keep_whitespace_and_language() -> None:
    html = '<pre><code class="language-python">def f():\n    return 1\n</code></pre>'
    assert html_to_markdown(html) == "```python\ndef f():\n    return 1\n```"


def test_tables_become_pipe_tables() -> None:
    html = "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>x|y</td></tr><tr><td>2</td></tr></table>"
    assert html_to_markdown(html) == "| a | b |\n|---|---|\n| 1 | x\\|y |\n| 2 |  |"


def test_scripts_styles_and_head_are_dropped_but_title_kept() -> None:
    html = "<html><head><title>T</title><style>p{}</style></head><body><script>var a;</script><p>hi</p></body></html>"
    assert html_to_markdown(html) == "# T\n\nhi"


def test_blockquote_and_entities() -> None:
    assert html_to_markdown("<blockquote><p>a &amp; b</p><p>c</p></blockquote>") == "> a & b\n>\n> c"


def test_formatting_nested_past_the_depth_bound_is_written_inline() -> None:
    html = "<b>" * 50_000 + "deep text" + "</b>" * 50_000 + "<p>after</p>"
    out = html_to_markdown(html)
    assert "deep text" in out and out.endswith("after")


def test_thousands_of_unclosed_links_and_stray_end_tags_still_convert() -> None:
    html = "<a href='/x'>link " * 5_000 + "</span>" * 5_000 + "<p>end</p>"
    out = html_to_markdown(html, "https://example.com/")
    assert out.startswith("[link [link") and "end" in out and out.endswith("(https://example.com/x)")


def test_a_skipped_element_full_of_unclosed_tags_hides_all_of_them() -> None:
    html = "<svg>" + "<g><p>hidden" * 5_000 + "</svg><p>shown</p>"
    assert html_to_markdown(html) == "shown"
