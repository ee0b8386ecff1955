"""Long-term memory: the entries journal, Dream (distilling entries into both MEMORY.md files) and the
versions that make every memory write reviewable and undoable (docs/architecture.md §13).

Nothing here imports the agent loop or a front end; the loop feeds entries in (``agent/memory_keeper.py``)
and the CLI and the TUI read the same files.
"""
