"""The MCP client core: one JSON-RPC peer (``core``), negotiation, the methods ``call`` runs,
answers to server requests from injection rules, OAuth on 401, and a recorded session
(``session``: the core on a client link, assembled like every mode)."""
