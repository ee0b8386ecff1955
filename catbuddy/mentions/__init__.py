"""@-mentions: finding the files a message names (parse.py), the file list and fuzzy ranking behind the
app's `@` picker (files.py, fuzzy.py). What a mention attaches is built by the agent (agent/user_input.py)."""
