"""`python -m mcptape.servers.debug_script`: the debug-script MCP server on stdio."""

from mcptape.servers.debug_script.server import main

main()
