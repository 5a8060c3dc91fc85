"""`python -m mcptape.servers.recordings`: the recordings MCP server on stdio (same options as `mcptape mcp`)."""

from mcptape.cli.mcp import mcp

mcp(prog_name="python -m mcptape.servers.recordings")
