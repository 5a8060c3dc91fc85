"""debug-script: a built-in MCP server that evaluates an expression at every breakpoint hit of a Node.js script.

Modules, one concern each: ``server`` (the MCP tool), ``arguments`` (checking
the tool's arguments), ``transport`` (stdin lines the SDK can answer),
``session`` (one run), ``pauses`` (where a pause is and whether it counts),
``locations`` (which lines hold code), ``launch`` (the Node process and its
inspector URL), ``policy`` (which programs may be launched), ``cdp`` (the
DevTools Protocol client), ``target`` (which scripts the breakpoint file names),
``predict`` (source maps on disk), ``sourcemap`` (source map decoding),
``evaluate`` (typing and bounding the values), ``errors`` (the messages a caller sees).

Run it with ``mcptape debug-script`` or ``python -m mcptape.servers.debug_script``.
"""
