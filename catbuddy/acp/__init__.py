"""`catbuddy acp`: the Agent Client Protocol over stdio, so editors (Zed, JetBrains, Neovim, Emacs) drive
catbuddy. server.py answers the protocol's methods with one AgentLoop per session; updates.py turns the
loop's events into `session/update` notifications; client_files.py reads and writes through the editor's
`fs/*` methods when it offers them. The `acp` package is imported only by this command."""
