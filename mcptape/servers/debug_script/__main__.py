"""`python -m mcptape.servers.debug_script`: the debug-script MCP server on stdio (same options as the CLI)."""

from mcptape.cli.debug_script import debug_script

debug_script(prog_name="python -m mcptape.servers.debug_script")
