"""`mcptape servers`: the upstreams mcptape can record or serve, with their transport."""

from __future__ import annotations

import click

from mcptape.cli.common import UserError
from mcptape.cli.helptext import Command
from mcptape.cli.output import output_options

COLUMNS = ("name", "transport", "source", "target")


@click.command(cls=Command)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="An mcpServers config file (the format desktop clients use); its entries come first.",
)
@output_options
def servers(config_path: str | None, fmt: str) -> None:
    """List the registered upstreams: entries of --config, then the built-in servers.

    Each row gives the name (what `record --upstream NAME` and `mcptape proxy`'s
    /servers/NAME/ take), the transport mcptape uses to reach it (stdio, http or sse),
    where the entry comes from, and the command or URL (secrets redacted). An entry
    that mcptape cannot use is listed with transport "invalid" and the reason; the
    others still work.

    \b
    Examples:
      mcptape servers
      mcptape servers --config ~/.config/Claude/claude_desktop_config.json --json
    """
    from mcptape.cli.output import emit
    from mcptape.config.registry import ConfigError, builtin_upstreams, read_registry

    try:
        # Read once: a config of many thousand entries is parsed and redacted once, not twice.
        registry = read_registry(config_path) if config_path is not None else None
    except ConfigError as exc:
        raise UserError(str(exc)) from exc
    configured = registry.specs if registry is not None else {}
    builtins = builtin_upstreams()
    known = {**configured, **{name: spec for name, spec in builtins.items() if name not in configured}}
    rows: list[tuple[str, str, str, str]] = []
    for name, spec in known.items():
        source = "built-in" if name in builtins and spec == builtins[name] else str(config_path)
        # describe() gives the command line or URL with its secrets already redacted.
        rows.append((name, spec.transport, source, spec.describe()))
    prefix = f"{config_path}: server {{!r}}"
    for name, problem in (registry.problems if registry is not None else {}).items():
        # The complaint without its "FILE: server 'x'" lead, which the row already says.
        reason = problem.removeprefix(prefix.format(name)).lstrip(" :")
        rows.append((name, "invalid", str(config_path), reason))
    emit(rows, COLUMNS, fmt)
