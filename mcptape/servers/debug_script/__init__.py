"""debug-script: a built-in MCP server that evaluates an expression at every breakpoint hit of a Node.js script.

Modules, one concern each: ``server`` (the MCP tool), ``session`` (one run),
``launch`` (the Node process and its inspector URL), ``cdp`` (the DevTools
Protocol client), ``target`` (which scripts the breakpoint file names),
``sourcemap`` (source map decoding), ``evaluate`` (typing the values),
``errors`` (the messages a caller sees).

Run it with ``mcptape debug-script`` or ``python -m mcptape.servers.debug_script``.
"""
