"""An MCP server (the SDK's) whose one tool takes its time: ``paced(steps, pause, label)`` reports
progress at each of ``steps`` steps, ``pause`` seconds apart, then answers ``label``.

Tests serve it in-process (tests.helpers.inprocess) to several clients at once.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import Context, MCPServer


def server() -> MCPServer:
    paced_server = MCPServer(name="paced", version="1.0.0")

    @paced_server.tool()
    async def paced(ctx: Context, steps: int, pause: float, label: str) -> str:
        """Report progress at each step, ``pause`` seconds apart, then answer ``label``."""
        for step in range(1, steps + 1):
            await asyncio.sleep(pause)
            await ctx.report_progress(step, steps, f"{label} {step}")
        return label

    return paced_server
