"""The `mcptape` command line: a click group whose commands are imported on first use.

Command modules import only click at module level and pull in heavy libraries
(SQLAlchemy, aiohttp, the mcp SDK) inside their functions, so `mcptape --help`
stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from mcptape import __version__

# name -> "module:attribute"; the order is the order `--help` lists them in.
COMMANDS: dict[str, str] = {
    "record": "mcptape.cli.record:record",
    "sessions": "mcptape.cli.sessions:sessions",
    "show": "mcptape.cli.show:show",
    "sql": "mcptape.cli.sql:sql",
    "export": "mcptape.cli.export:export",
    "servers": "mcptape.cli.servers:servers",
    "proxy": "mcptape.cli.proxy:proxy",
    "wrap": "mcptape.cli.wrap:wrap",
    "unwrap": "mcptape.cli.wrap:unwrap",
    "demo": "mcptape.cli.demo:demo",
    "debug-script": "mcptape.cli.debug_script:debug_script",
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command is needed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcptape")
def cli() -> None:
    """Record, inspect and query Model Context Protocol traffic.

    mcptape sits between an MCP client and an MCP server, forwards every
    JSON-RPC frame unchanged and records it into a SQL database (SQLite by
    default: $MCPTAPE_DB, else the per-user data directory).

    \b
    Examples:
      mcptape record -- npx -y @modelcontextprotocol/server-everything
      mcptape sessions
      mcptape show last
      mcptape sql "select tool, avg(latency_ms) from tool_calls group by 1"
    """


def main(argv: list[str] | None = None) -> Any:
    """Console-script entry point."""
    return cli.main(args=argv, prog_name="mcptape")


if __name__ == "__main__":
    main()
