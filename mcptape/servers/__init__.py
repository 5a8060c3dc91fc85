"""Built-in MCP servers: `demo` (the tour) and `debug_script` (breakpoint evaluation in Node.js)."""
