"""`mcptape proxy`: a gateway serving every registered upstream over streamable HTTP and legacy SSE."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from mcptape.cli.common import UserError, db_option, otlp_option
from mcptape.cli.helptext import Command
from mcptape.cli.rule_options import (
    declare_option,
    fault_options,
    faults_from_cli,
    rule_options,
    rules_from_cli,
)

if TYPE_CHECKING:
    from mcptape.gateway.sealed import Sealer


@click.command(
    cls=Command,
    summary_options=(
        "--config",
        "--listen",
        "--db",
        "--token-file",
        "--no-auth",
        "--allow-remote",
        "--redact",
    ),
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file; its entries (and the built-ins) are served.",
)
@click.option(
    "--listen",
    default="127.0.0.1:8808",
    show_default=True,
    metavar="HOST:PORT",
    help="Address to listen on (port 0: any free port). Only loopback unless --allow-remote.",
)
@db_option
@click.option(
    "--token-file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Where the generated token is written, readable by you alone "
    "(default: proxy-token in mcptape's data directory).",
)
@click.option("--no-auth", is_flag=True, help="Serve without a token (refused unless listening on loopback).")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow --listen on an address other than loopback (anyone who can reach it and has the token "
    "can start your registered servers).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A further Host name requests may carry (repeatable); others get 403.",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A browser Origin allowed besides this gateway's own (repeatable; its pages get CORS answers); others get 403.",
)
@click.option(
    "--redact",
    "redact_names",
    multiple=True,
    metavar="HEADER|/JSON/PATH",
    help="Something more to redact in recordings (repeatable): a header name, or a JSON path "
    "into each message, a JSON Pointer where * matches any key or index (e.g. "
    "/params/arguments/password, /result/content/*/text). Forwarded messages are untouched.",
)
@click.option(
    "--idle-timeout",
    default=600.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    metavar="SECONDS",
    help="End a session no request or stream used for this long (clients often never DELETE).",
)
@click.option(
    "--grace",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="On shutdown, how long each stdio upstream gets after its stdin closes, then after SIGTERM.",
)
@click.option(
    "--max-sessions",
    default=100,
    show_default=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Most sessions at once (each may be a server process); past it a new session gets 503.",
)
@click.option(
    "--replica",
    metavar="NAME",
    help="This gateway's name in a fleet, recorded on every session (default: host name and port).",
)
@click.option(
    "--session-key-file",
    metavar="PATH",
    type=click.Path(dir_okay=False),
    help="Keys that seal session ids, one a line (32 bytes as base64 or hex; the first seals, every "
    "one opens): replicas sharing them serve each other's HTTP-upstream sessions. "
    "Default: $MCPTAPE_SESSION_KEY.",
)
@rule_options
@declare_option
@fault_options
@otlp_option
def proxy(
    config_path: str | None,
    listen: str,
    db: str | None,
    token_file: str | None,
    no_auth: bool,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    redact_names: tuple[str, ...],
    idle_timeout: float,
    grace: float,
    max_sessions: int,
    replica: str | None,
    session_key_file: str | None,
    handle_sampling: str | None,
    handle_elicitation: str | None,
    roots: tuple[str, ...],
    inject: str | None,
    declare_capabilities: bool,
    fault: tuple[str, ...],
    faults_file: str | None,
    otlp: str | None,
) -> None:
    """Serve every registered MCP server over HTTP, recording every session.

    Each upstream NAME (see `mcptape servers`) is served at /servers/NAME/mcp
    (streamable HTTP) and /servers/NAME/sse (legacy HTTP+SSE), whatever
    transport it speaks itself; a stdio server is started once per client
    session. GET /health answers {"status":"ok", ...} with the store's state
    (writable, lag_s), or 503 while this replica cannot record.

    Requests need the gateway's token, as `Authorization: Bearer TOKEN` (not
    forwarded) or `X-Mcptape-Token: TOKEN` (then the client's own
    Authorization reaches the upstream). The token is $MCPTAPE_PROXY_TOKEN,
    else a new one printed once and written to --token-file. Host and Origin
    are checked against DNS rebinding (403). Only registry entries can be
    started. Ctrl-C, SIGTERM or SIGHUP closes every session, stops every
    upstream and flushes the recording.

    \b
    Examples:
      mcptape proxy --config claude_desktop_config.json
      mcptape proxy --listen 127.0.0.1:0 --no-auth
      mcptape proxy --handle-sampling auto --roots /srv/project

    \f
    A fleet (several replicas on one PostgreSQL behind HAProxy, see deploy/):
    give every replica the same token, database, config and session key
    (--session-key-file or $MCPTAPE_SESSION_KEY), a --replica name, and
    --allow-host for the balancer's address. Session ids are then sealed: any
    replica serves a session whose upstream speaks streamable HTTP; a session
    with a process (stdio) stays on the replica that started it (the balancer
    keeps it there; another replica answers 404).

    Injection (--handle-sampling, --handle-elicitation, --roots, --inject)
    works as for `record`, in every session. With injection rules, a
    streamable HTTP upstream is no longer passed through request for request:
    the gateway runs each session itself (its own session ids), so that it
    can answer the server's requests.

    Faults (--fault, --faults) work as for `record`, in every session; they
    too need the gateway to run each session itself. `cut` ends the SSE
    stream the frame would go on (the session goes on; a client may resume
    it with Last-Event-ID).

    \b
    More examples:
      mcptape proxy --redact /params/arguments/password \\
          --redact X-Session-Secret
      mcptape proxy --fault 'tools/call=error:-32603,p=0.1'
    """
    host, port = _parse_listen(listen)
    header_names, json_paths = _redactions(redact_names)
    rules = rules_from_cli(handle_sampling, handle_elicitation, roots, inject)
    if declare_capabilities and not rules:
        raise UserError(
            "--declare-capabilities needs rules to declare: --handle-sampling, --handle-elicitation, --roots or --inject"
        )
    faults = faults_from_cli(fault, faults_file)
    from mcptape.gateway.security import TOKEN_ENV, is_loopback, new_token

    if not is_loopback(host):
        if not allow_remote:
            raise UserError(
                f"--listen {listen} is not a loopback address; add --allow-remote to serve other machines"
            )
        if no_auth:
            raise UserError("--no-auth works on loopback only; drop it or listen on 127.0.0.1")
        click.echo(
            f"mcptape: warning: listening on {host}: anyone who can reach it and has the token can use your servers",
            err=True,
        )
    sealer = _sealer(session_key_file)
    from mcptape.config.registry import ConfigError, known_upstreams, read_registry
    from mcptape.terminal import safe

    try:
        registry = known_upstreams(config_path, db=db)
        problems = read_registry(config_path).problems if config_path is not None else {}
    except ConfigError as exc:
        raise UserError(str(exc)) from exc
    for problem in problems.values():
        # One odd entry does not stop the gateway: the others are served.
        click.echo(f"mcptape: warning: not served: {safe(problem)}", err=True)
    token: str | None = None
    announce = False
    if not no_auth:
        token = os.environ.get(TOKEN_ENV) or None
        if token is None:
            token, announce = new_token(), True
            _write_token(token, token_file)
    import asyncio

    from mcptape.gateway.app import GatewayConfig
    from mcptape.gateway.listener import run_gateway

    config = GatewayConfig(
        registry=registry,
        host=host,
        port=port,
        token=token,
        db=db,
        idle_timeout=idle_timeout,
        grace=grace,
        redact_names=header_names,
        redact_paths=json_paths,
        extra_hosts=allow_hosts,
        extra_origins=allow_origins,
        rules=rules if rules else None,
        declare_capabilities=declare_capabilities,
        faults=faults,
        max_sessions=max_sessions,
        replica=replica,
        sealer=sealer,
        otlp=otlp,
    )
    sys.exit(asyncio.run(run_gateway(config, token if announce else None)))


def _sealer(path: str | None) -> Sealer | None:
    """The key ring of --session-key-file or $MCPTAPE_SESSION_KEY; None when neither is given."""
    from mcptape.gateway.sealed import Sealer, SessionKeyError, read_keys

    try:
        keys = read_keys(path)
    except SessionKeyError as exc:
        raise UserError(str(exc)) from None
    return Sealer(keys) if keys else None


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not host or int(port) > 65535:
        raise UserError(f"--listen {listen!r} is not HOST:PORT (for example 127.0.0.1:8808)")
    return host.strip("[]"), int(port)


def _redactions(values: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """--redact values split into header names and parsed JSON paths; a UserError for a bad one."""
    import re

    from mcptape.redact import parse_json_path

    names: list[str] = []
    paths: list[tuple[str, ...]] = []
    for value in values:
        if value.startswith("/"):
            try:
                paths.append(parse_json_path(value))
            except ValueError as exc:
                raise UserError(f"--redact {exc}") from None
        elif re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", value):
            names.append(value)
        else:
            raise UserError(
                f"--redact {value!r} is neither a header name nor a JSON path starting with / "
                "(for example X-Secret or /params/arguments/password)"
            )
    return tuple(names), tuple(paths)


def _write_token(token: str, path: str | None) -> None:
    from pathlib import Path

    if path is None:
        import platformdirs

        target = Path(platformdirs.user_data_dir("mcptape", appauthor=False)) / "proxy-token"
    else:
        target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Created 0600 from the start: never a moment where others could read it.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
    except OSError as exc:
        raise UserError(f"cannot write the token file {target}: {exc.strerror}") from exc
