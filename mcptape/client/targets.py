"""Which server ``call`` talks to, from its flags: a command, a registry entry or a URL.

Every mistake is a :class:`~mcptape.client.errors.ValidationError` with a one-line
message; the command line turns it into a usage error.
"""

from __future__ import annotations

import sys
from typing import Any

from mcptape.client.errors import ValidationError
from mcptape.client.session import Target


def read_script(path: str) -> str:
    """The text of ``--script FILE`` (``-``: stdin)."""
    if path == "-":
        if sys.stdin is None:  # started with stdin closed (`<&-`)
            raise ValidationError("--script -: stdin is closed; give the steps on stdin or --script FILE")
        try:
            return sys.stdin.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"--script -: cannot read stdin: {exc}") from None
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as exc:
        raise ValidationError(f"--script {path}: cannot read it: {exc.strerror or exc}") from None


def headers_from(opts: dict[str, Any]) -> dict[str, str]:
    """``--header 'K: V'`` (repeatable) and ``--token T`` as one dict."""
    from mcptape.proxy.http.headers import HeaderError, check_header

    headers = {}
    for header in opts["headers"]:
        key, sep, value = header.partition(":")
        if not sep or not key.strip():
            raise ValidationError(f"--header {header!r}: expected 'Name: value'")
        try:
            check_header(key.strip(), value.strip())
        except HeaderError as exc:
            raise ValidationError(f"--header: {exc}") from None
        headers[key.strip()] = value.strip()
    if opts["token"]:
        if any(ch in opts["token"] for ch in "\r\n\0"):
            raise ValidationError("--token has a line break or NUL in it")
        headers["Authorization"] = f"Bearer {opts['token']}"
    return headers


def _remote_target(
    url: str, spec: Any, headers: dict[str, str], opts: dict[str, Any], name: str | None
) -> Target:
    """A streamable HTTP or SSE server; flags override the config entry."""
    from mcptape.config.registry import url_problem

    problem = url_problem(url)
    if problem is not None:
        raise ValidationError(f"--url {problem}")
    merged = dict(spec.headers or {}) if spec is not None else {}
    if merged:
        from mcptape.proxy.http.headers import HeaderError, expand_headers

        try:
            merged = expand_headers(merged)
        except HeaderError as exc:
            raise ValidationError(f"upstream {name!r}: {exc}") from None
    merged.update(headers)
    transport = opts["transport"] or (spec.transport if spec is not None else None) or "http"
    from mcptape.redact import redact_url

    return Target(redact_url(url), url=url, transport=transport, headers=merged, name=opts["name"] or name)


def target_from(command: tuple[str, ...], opts: dict[str, Any]) -> Target:
    """The server ``call`` talks to, from ``-- COMMAND``, ``--upstream``/``--config --server`` or ``--url``."""
    import shlex

    name = opts["upstream"] or opts["server_name"]
    if opts["upstream"] and opts["server_name"] and opts["upstream"] != opts["server_name"]:
        raise ValidationError("give --upstream or --server, not both")
    if opts["server_name"] and not opts["config_path"]:
        raise ValidationError("--server NAME needs --config FILE")
    chosen = [bool(command), bool(name), bool(opts["url"])]
    if sum(chosen) > 1:
        raise ValidationError("give one server: a command after --, --upstream/--server NAME, or --url URL")
    headers = headers_from(opts)
    spec = None
    if name:
        from mcptape.config.registry import ConfigError, resolve_upstream

        try:
            spec = resolve_upstream(name, opts["config_path"])
        except ConfigError as exc:
            raise ValidationError(str(exc)) from None
    url = opts["url"] or (spec.url if spec is not None else None)
    if url is not None:
        return _remote_target(url, spec, headers, opts, name)
    if opts["transport"] or headers:
        raise ValidationError("--transport, --header and --token go with --url")
    if spec is not None:
        assert spec.command is not None
        return Target(
            spec.describe(), argv=list(spec.command), env=spec.env, cwd=spec.cwd, name=opts["name"] or name
        )
    if not command:
        raise ValidationError(
            "no server: give its command after --, --upstream NAME, or --config FILE --server NAME"
        )
    return Target(shlex.join(command), argv=list(command), name=opts["name"])
