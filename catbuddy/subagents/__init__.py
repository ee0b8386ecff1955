"""Subagent definitions: ``.catbuddy/agents/*.md``, ``~/.catbuddy/agents/*.md`` and the shipped ones
(docs/architecture.md §5c). Running one is the agent's job (``agent/subagent.py``)."""
