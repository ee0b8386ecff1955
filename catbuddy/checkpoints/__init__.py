"""Checkpoints of the work tree in a shadow git repository, and undo, redo and rewind of turns
(docs/architecture.md §15)."""
