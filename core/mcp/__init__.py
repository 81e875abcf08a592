"""`rmm mcp`: the memory as a Model Context Protocol server (the `mcp` extra).

`access` decides which users a caller may act for, `payload` turns memories into JSON,
`tools` defines the tools, `server` builds and runs the server, `transport` checks each
message before the SDK reads it, `command` is the CLI."""
