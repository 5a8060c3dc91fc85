"""``mcptape mcp``: mcptape's recordings served over MCP (tools to list, show, query, replay and diff them)."""
