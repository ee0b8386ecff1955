"""A streamed reply: a Markdown widget (imported by the first reply shown, after the first frame)."""

from __future__ import annotations

from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownStream

from catbuddy.tui.widgets.block import TranscriptBlock


class AssistantBlock(Markdown, TranscriptBlock):
    """A reply; while streaming, deltas go through a MarkdownStream so only the tail is re-parsed."""

    def __init__(self, text: str = "") -> None:
        super().__init__(text or None, classes="assistant-block")
        self._stream: MarkdownStream | None = None
        self.text = text

    async def write(self, fragment: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        self.text += fragment
        await self._stream.write(fragment)

    async def on_unmount(self) -> None:
        # A reply still streaming when the app closes (or its block is pruned) must not leave its
        # MarkdownStream task running.
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.stop()

    async def finish(self, final_text: str | None = None) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if final_text is not None and final_text.strip() != self.text.strip():
            # Nothing (or something else) was streamed: show the stored message as it is.
            self.text = final_text
            await self.update(final_text)
