"""What every transcript block is (shared by messages.py and reply.py)."""

from __future__ import annotations


class TranscriptBlock:
    """Mixin: where a block sits in the session, so pruned blocks can be re-mounted from the transcript."""

    user_ordinal: int | None = None  # set on user blocks: how many user messages came before
