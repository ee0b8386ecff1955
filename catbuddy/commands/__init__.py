"""Custom slash commands: Markdown prompts kept per project or per user (custom.py)."""
