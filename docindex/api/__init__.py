"""The library's face: ``docindex.open()`` and ``Index`` (index), one call per user command
(commands), where an index lives (workspace), its roots (roots), judged evaluation (evaluate).
May import: docindex.ingest, docindex.search and below; the CLI and MCP server call only this.
"""
