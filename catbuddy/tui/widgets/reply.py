"""A reply: one widget drawing Markdown line by line (imported by the first reply shown, after the
first frame).

Why not Textual's ``Markdown`` widget: it mounts a widget per block (about 26 per 1,000 characters),
and Textual lays out every widget of the screen again after each update, so a long reply cost CPU in
proportion to everything above it (issue 31). Here a reply is ONE widget whatever its length. Its text
is cut into pieces at block boundaries (a blank line outside a code fence, every ``CHUNK_CHARS`` or
so); each piece is rendered by Rich's ``Markdown`` once per width and kept as lines. While a reply
streams only the last piece changes, so an update parses and renders that piece alone and repaints
only its lines; the height the layout asks for is a sum. Each update costs what changed on screen.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.strip import Strip
from textual.widget import Widget

from catbuddy.tui.widgets.block import TranscriptBlock

CHUNK_CHARS = 500  # a chunk is closed at the next block boundary after this many characters
CODE_THEME = "monokai"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def split_point(text: str, after: int) -> int:
    """Where ``text`` can be cut into two Markdown documents that render as the whole did: just after
    a blank line at or beyond ``after``, outside any code fence. 0 when there is no such place yet."""
    position = after
    while True:
        found = text.find("\n\n", position)
        if found < 0:
            return 0
        cut = found + 2
        if not _inside_fence(text[:cut]):
            return cut
        position = cut


def _inside_fence(text: str) -> bool:
    """Whether ``text`` ends inside a fenced code block (an opening fence without its closing one)."""
    opener: str | None = None
    for match in _FENCE.finditer(text):
        fence = match.group(1)
        if opener is None:
            opener = fence
        elif fence[0] == opener[0] and len(fence) >= len(opener):
            line_end = text.find("\n", match.end())
            rest = text[match.end() : line_end if line_end >= 0 else len(text)]
            if not rest.strip():  # a closing fence has nothing after it
                opener = None
    return opener is not None


def chunks_of(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into chunks of about ``size`` characters, at block boundaries."""
    parts: list[str] = []
    while len(text) > size:
        cut = split_point(text, size)
        if not cut:
            break
        parts.append(text[:cut])
        text = text[cut:]
    parts.append(text)
    return parts


class AssistantBlock(Widget, TranscriptBlock):
    """A reply: its pieces' rendered lines, one after another, a blank line between pieces."""

    DEFAULT_CSS = """
    AssistantBlock {
        height: auto;
    }
    """

    def __init__(self, text: str = "") -> None:
        super().__init__(classes="assistant-block")
        self.text = text
        self._pieces: list[str] = chunks_of(text) if text else []
        self._width = -1  # the width the lines below were rendered at
        self._lines: list[list[Strip]] = []  # per piece (the blank line between pieces included)
        self._starts: list[int] = []  # the first line of each piece
        self._style = Style()  # the widget's own style at that width (looking it up is not cheap)

    # --- text ------------------------------------------------------------------------------------

    async def write(self, fragment: str) -> None:
        self.text += fragment
        if not self._pieces:
            self._pieces.append("")
        self._pieces[-1] += fragment
        parts = chunks_of(self._pieces[-1])  # a fragment may be long: one batch of a fast stream
        self._pieces[-1:] = parts
        self._changed(len(self._pieces) - len(parts))

    async def finish(self, final_text: str | None = None) -> None:
        if final_text is not None and final_text.strip() != self.text.strip():
            # Nothing (or something else) was streamed: show the stored message as it is.
            self.text = final_text
            self._pieces = chunks_of(final_text)
            self._changed(0)

    def _changed(self, first: int) -> None:
        """Pieces from ``first`` on have new text: render them again, repaint, re-lay out if taller."""
        if self._width < 0:
            return  # not laid out yet: everything is rendered on the first layout
        height = self._height()
        del self._lines[first:]
        del self._starts[first:]
        self._render_pieces(self._width)
        start = self._starts[first] if first < len(self._starts) else height
        if self._height() != height:
            self.refresh(layout=True)
        else:
            self.refresh(Region(0, start, self.size.width, max(1, self._height() - start)))

    # --- layout and drawing ----------------------------------------------------------------------

    def _height(self) -> int:
        return self._starts[-1] + len(self._lines[-1]) if self._lines else 0

    def _render_pieces(self, width: int) -> None:
        """Render the pieces not rendered yet at ``width`` (all of them when the width changed)."""
        if width != self._width:
            self._width, self._lines, self._starts = width, [], []
            self._style = self.rich_style
        console = self.app.console
        options = console.options.update(width=max(1, width), height=None, highlight=False)
        style = self._style
        for index in range(len(self._lines), len(self._pieces)):
            rendered = console.render_lines(
                Markdown(self._pieces[index], code_theme=CODE_THEME), options, pad=False
            )
            lines = [Strip(line).apply_style(style) for line in rendered]
            while lines and not lines[-1].text.strip():
                lines.pop()  # the blank line before the next piece is added below, once
            if index:
                while lines and not lines[0].text.strip():
                    lines.pop(0)  # one blank line between pieces, whatever the first block adds
                lines.insert(0, Strip([Segment(" " * width, style)], width))
            self._starts.append(self._height())
            self._lines.append(lines)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._render_pieces(width)
        return self._height()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if width != self._width:
            self._render_pieces(width)
        index = bisect_right(self._starts, y) - 1
        if index < 0 or y >= self._height():
            return Strip.blank(width, self._style)
        return self._lines[index][y - self._starts[index]].crop_extend(0, width, self._style)

    def on_resize(self) -> None:
        self.refresh(layout=True)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self._width >= 0 and self.rich_style != self._style:
            self._width = -1  # a new theme: render again in its colours
            self.refresh(layout=True)
