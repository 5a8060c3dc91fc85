"""`mcptape servers`: the upstreams mcptape can record or serve, with their transport."""

from __future__ import annotations

import click

from mcptape.cli.common import UserError
from mcptape.cli.output import output_options

COLUMNS = ("name", "transport", "source", "target")


@click.command()
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file (the format desktop clients use); its entries come first.",
)
@output_options
def servers(config_path: str | None, fmt: str) -> None:
    """List the registered upstreams: entries of --config, then the built-in servers.

    Each row gives the name (what `record --upstream NAME` and `mcptape proxy`'s
    /servers/NAME/ take), the transport mcptape uses to reach it (stdio, http or sse),
    where the entry comes from, and the command or URL (secrets redacted).

    \b
    Examples:
      mcptape servers
      mcptape servers --config ~/.config/Claude/claude_desktop_config.json --json
    """
    from mcptape.cli.output import emit
    from mcptape.config import ConfigError, builtin_upstreams, known_upstreams

    try:
        known = known_upstreams(config_path)
    except ConfigError as exc:
        raise UserError(str(exc)) from exc
    builtins = builtin_upstreams()
    rows = []
    for name, spec in known.items():
        source = "built-in" if name in builtins and spec == builtins[name] else str(config_path)
        rows.append((name, spec.transport, source, _safe(spec.describe(), spec.url is not None)))
    emit(rows, COLUMNS, fmt)


def _safe(target: str, is_url: bool) -> str:
    try:
        from mcptape import redact  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # pragma: no cover - until the redaction module lands on main
        return _fallback(target, is_url)
    if is_url:
        return str(redact.redact_url(target))
    import shlex

    return shlex.join(redact.redact_argv(shlex.split(target)))


def _fallback(target: str, is_url: bool) -> str:
    """Until mcptape.redact lands: no userinfo or query of a URL, no value after a secret flag."""
    import re
    import shlex
    from urllib.parse import urlsplit, urlunsplit

    if is_url:
        parts = urlsplit(target)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=""))
    argv = shlex.split(target)
    secret = re.compile(r"--?[\w-]*(key|token|secret|password)[\w-]*$", re.I)
    return shlex.join(["«redacted»" if i and secret.match(argv[i - 1]) else a for i, a in enumerate(argv)])
