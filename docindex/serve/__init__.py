"""Long-lived processes beside an index: the warm server that runs CLI commands next to
``watch`` (server, rendezvous) and the MCP server for agents (mcp).
May import: docindex.api and below; never docindex.cli.
"""
