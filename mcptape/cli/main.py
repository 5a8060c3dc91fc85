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
from mcptape.cli.common import Interrupted

_SUBCOMMAND_ARGS = "mcptape.subcommand_args"


# name -> "module:attribute"; the order is the order `--help` lists them in.
COMMANDS: dict[str, str] = {
    "record": "mcptape.cli.record:record",
    "call": "mcptape.cli.call:call",
    "probe": "mcptape.cli.probe:probe",
    "sessions": "mcptape.cli.sessions:sessions",
    "show": "mcptape.cli.show:show",
    "tail": "mcptape.cli.tail:tail",
    "ui": "mcptape.cli.ui:ui",
    "tui": "mcptape.cli.tui:tui",
    "sql": "mcptape.cli.sql:sql",
    "export": "mcptape.cli.export:export",
    "prune": "mcptape.cli.prune:prune",
    "replay": "mcptape.cli.replay:replay",
    "serve": "mcptape.cli.serve:serve",
    "diff": "mcptape.cli.diff:diff",
    "servers": "mcptape.cli.servers:servers",
    "proxy": "mcptape.cli.proxy:proxy",
    "wrap": "mcptape.cli.wrap:wrap",
    "unwrap": "mcptape.cli.wrap:unwrap",
    "demo": "mcptape.cli.demo:demo",
    "debug-script": "mcptape.cli.debug_script:debug_script",
    "mcp": "mcptape.cli.mcp:mcp",
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command is needed.

    It also makes the common slips easy to recover from: a mistyped command gets the
    nearest command name, an unknown option among a server's arguments (`mcptape record
    npx -y ...`) gets the `--` that was missing, and Ctrl-C ends any command with status
    130 and one line rather than click's "Aborted!".
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            from mcptape.cli.hints import did_you_mean

            ctx.fail(f"No such command {args[0]!r}.{did_you_mean(args[0], COMMANDS)}")
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta[_SUBCOMMAND_ARGS] = list(rest)
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            from mcptape.cli.hints import double_dash_hint

            if exc.ctx is not None and exc.ctx.command is not self:
                hint = double_dash_hint(exc.ctx.command, ctx.meta.get(_SUBCOMMAND_ARGS, []), exc.option_name)
                if hint:
                    raise click.UsageError(f"{exc.format_message()} {hint}", ctx=exc.ctx) from None
            raise
        except KeyboardInterrupt:
            raise Interrupted() from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


def _help_all(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from mcptape.cli.helptext import whole_help

    assert isinstance(ctx.command, click.Group)
    click.echo(whole_help(ctx.command, ctx), color=ctx.color)
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mcptape")
@click.option(
    "--help-all",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_help_all,
    help="Show the whole help of every command, one after the other (to read or page through).",
)
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
