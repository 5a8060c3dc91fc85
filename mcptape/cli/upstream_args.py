"""The server a command line names: a command after --, an ``--upstream`` registry entry or ``--url``.

`record`, `replay`, `serve` and `call` take the same three ways of naming a server; this
module turns them into what starts or reaches it, with a one-line UserError for a
mistake.
"""

from __future__ import annotations

import shlex
from typing import Any

from mcptape.cli.common import UserError


def remote_upstream(
    url: str | None,
    transport: str | None,
    header_flags: tuple[str, ...],
    command: tuple[str, ...],
    upstream: str | None,
    config_path: str | None,
) -> tuple[str, Any, str] | None:
    """(description, link factory, session transport) for a remote upstream; None for a command.

    ``--url``, or an ``--upstream`` entry of the registry that is a URL; a UserError (one
    line) for what cannot be served."""
    from mcptape.proxy.http.headers import HeaderError, expand_env, expand_headers, parse_header_flag

    if url is not None and (command or upstream):
        raise UserError("give one server: --url URL, --upstream NAME or a command after --")
    headers: dict[str, str] = {}
    if url is None:
        if not upstream:
            return None
        from mcptape.config.registry import ConfigError, resolve_upstream

        try:
            spec = resolve_upstream(upstream, config_path)
        except ConfigError as exc:
            raise UserError(str(exc)) from exc
        if spec.transport == "stdio" or spec.url is None:
            return None
        url, transport = spec.url, transport or spec.transport
        try:
            headers = expand_headers(spec.headers)
        except HeaderError as exc:
            raise UserError(f"upstream {upstream!r}: {exc}") from exc
    from mcptape.config.registry import url_problem

    problem = url_problem(url)
    if problem is not None:
        raise UserError(f"--url {problem}")
    try:
        for flag in header_flags:
            key, value = parse_header_flag(flag)
            headers[key] = expand_env(value)
    except HeaderError as exc:
        raise UserError(str(exc)) from exc
    chosen = transport or "auto"

    def factory() -> Any:
        from mcptape.proxy.http.upstream import remote_link

        return remote_link(url, chosen, headers)

    return _redacted_url(url), factory, f"stdio->{chosen}"


def _redacted_url(url: str) -> str:
    from mcptape.redact import redact_url

    return redact_url(url)


def upstream_command(
    command: tuple[str, ...], upstream: str | None, config_path: str | None
) -> tuple[list[str], dict[str, str] | None, str | None, str]:
    """(argv, env, cwd, description) of a stdio server: the command after --, or an
    ``--upstream`` entry (one `mcptape wrap` rewrote runs its own server, not a recorder)."""
    if command and upstream:
        raise UserError("give either --upstream NAME or a command after --, not both")
    if upstream:
        from mcptape.config.registry import ConfigError, resolve_upstream

        try:
            spec = resolve_upstream(upstream, config_path)
        except ConfigError as exc:
            raise UserError(str(exc)) from exc
        if spec.transport != "stdio" or not spec.command:
            raise UserError(
                f"upstream {upstream!r} is a remote server ({spec.url}); "
                "record runs stdio servers: give a command after --"
            )
        argv = list(spec.command)
        # An entry `mcptape wrap` rewrote already runs through a recorder: record its
        # server once, not a recorder recording a recorder.
        from mcptape.config.wrap import wrapped_split

        split = wrapped_split({"command": argv[0], "args": argv[1:]})
        if split is not None and split[1]:
            argv = split[1]
            return argv, spec.env, spec.cwd, shlex.join(argv)
        return argv, spec.env, spec.cwd, spec.describe()
    if not command:
        raise UserError("no server to record: give the server's command after --, or --upstream NAME")
    return list(command), None, None, shlex.join(command)
