"""The MCP client core that `mcptape call` and `mcptape replay` will share.

Empty for now; see shared/DESIGN.md ("CI-first client").
"""
