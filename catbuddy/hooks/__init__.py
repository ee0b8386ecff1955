"""Hooks: commands the user configures (`[hooks.<name>]`) run at `user_prompt_submit`, `pre_tool`,
`post_tool` and `stop`, with the event as JSON on stdin (runner.py)."""
