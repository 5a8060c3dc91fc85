"""mcpServers config files and the upstream registry.

Desktop clients (Claude Desktop, Cursor, Windsurf, ...) name their MCP servers in a
JSON file of this shape::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                  "env": {"DEBUG": "1"}, "cwd": "/home/me"},
        "remote": {"url": "https://mcp.example.com/mcp", "type": "http", "headers": {"X-Team": "a"}}}}

VS Code's ``mcp.json`` has the same entries under ``"servers"`` (with ``"type": "stdio"``
on local ones); both keys are read. ``load_config`` turns such a file into
``UpstreamSpec`` values; ``resolve_upstream`` looks a name up in it and, failing that,
among the servers built into mcptape. One malformed entry does not hide the others:
``read_registry`` keeps its one-line complaint, given when that name is asked for.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcptape.redact import redact_argv, redact_url
from mcptape.wire.jsontext import loads_jsonc

Transport = Literal["stdio", "http", "sse"]

# The "type" values clients write for remote entries, and the transport each means.
REMOTE_TYPES: dict[str, Transport] = {
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}

# The top-level keys that hold the entries: most clients, then VS Code's mcp.json.
SERVER_KEYS: tuple[str, ...] = ("mcpServers", "servers")


class ConfigError(Exception):
    """A config file or an upstream name the user must fix; the message is one line."""


@dataclass(frozen=True)
class UpstreamSpec:
    """How to reach one MCP server: a command to spawn (stdio) or a URL (http, sse)."""

    name: str
    transport: Transport
    command: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None

    def describe(self) -> str:
        """One line for people and the recording: the shell-quoted command line, or the
        URL, with secrets (flag values, URL credentials) replaced by placeholders."""
        if self.command is not None:
            return shlex.join(redact_argv(self.command))
        return redact_url(self.url or "")


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot name a remote MCP server (one line), or None when it can."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError as exc:
        return f"{url!r} is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"{url!r} is not an http:// or https:// URL"
    if not parts.hostname:
        return f"{url!r} names no host"
    return None


def builtin_upstreams(
    db: str | None = None, config_path: str | os.PathLike[str] | None = None
) -> dict[str, UpstreamSpec]:
    """The servers shipped with mcptape, run with the interpreter mcptape itself runs on.

    ``recordings`` (``mcptape mcp``) reads ``db`` (else its own default) and may replay
    against the entries of ``config_path``: a gateway gives it its own two.
    """
    recordings = [sys.executable, "-m", "mcptape.servers.recordings"]
    if config_path is not None:
        recordings += ["--config", str(Path(config_path).resolve())]
    return {
        "debug-script": UpstreamSpec(
            name="debug-script",
            transport="stdio",
            command=[sys.executable, "-m", "mcptape.servers.debug_script"],
        ),
        "demo": UpstreamSpec(
            name="demo",
            transport="stdio",
            command=[sys.executable, "-m", "mcptape.servers.demo"],
        ),
        # The database through the environment: a URL's password stays out of the command
        # line, which is recorded as the session's upstream.
        "recordings": UpstreamSpec(
            name="recordings",
            transport="stdio",
            command=recordings,
            env={"MCPTAPE_DB": db} if db is not None else None,
        ),
    }


def read_config_document(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """Read an mcpServers config file: its text and the parsed document.

    Raises ConfigError when the file is missing or unreadable, is not valid JSON
    (the message gives line and column), or has no ``mcpServers`` object.
    """
    file = Path(path)
    try:
        # Bytes, not read_text: universal newlines would turn CRLF files into LF ones.
        text = file.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            f"config file {file} does not exist; pass the path of an mcpServers JSON file"
        ) from None
    except IsADirectoryError:
        raise ConfigError(
            f"config file {file} is a directory; pass the path of an mcpServers JSON file"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {file} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    try:
        document = loads_jsonc(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{file}:{exc.lineno}:{exc.colno}: invalid JSON ({exc.msg}); fix the file and try again"
        ) from None
    except RecursionError:
        raise ConfigError(
            f"{file}: JSON nested too deeply to read; an mcpServers file needs a few levels"
        ) from None
    key = servers_key(document)
    if key is None:
        raise ConfigError(
            f'{file} has no top-level "mcpServers" object (nor VS Code\'s "servers"); expected {{"mcpServers": {{"name": {{"command": ...}}}}}}'
        )
    if not isinstance(document[key], dict):
        raise ConfigError(f'{file}: "{key}" must be an object mapping server names to entries')
    return text, document


def servers_key(document: Any) -> str | None:
    """The top-level key of ``document`` that holds its server entries, if any."""
    if not isinstance(document, dict):
        return None
    return next((key for key in SERVER_KEYS if key in document), None)


@dataclass(frozen=True)
class Registry:
    """A config file's entries: those that parse, and a one-line complaint for each that does not."""

    specs: dict[str, UpstreamSpec]
    problems: dict[str, str]


def read_registry(path: str | os.PathLike[str]) -> Registry:
    """Every entry of a config file, a malformed one set aside with its complaint.

    Raises ConfigError only for what makes the whole file unusable (missing, invalid
    JSON, no servers object): a client config with one odd entry still serves the rest.
    """
    _, document = read_config_document(path)
    specs: dict[str, UpstreamSpec] = {}
    problems: dict[str, str] = {}
    for name, entry in document[servers_key(document) or ""].items():
        try:
            specs[name] = parse_entry(name, entry, source=str(path))
        except ConfigError as exc:
            problems[name] = str(exc)
    return Registry(specs, problems)


def load_config(path: str | os.PathLike[str]) -> dict[str, UpstreamSpec]:
    """The upstreams named in an mcpServers config file, in file order.

    Raises ConfigError (one line) for a missing file, invalid JSON, no ``mcpServers``,
    or an entry that is malformed or has neither ``command`` nor ``url``.
    """
    registry = read_registry(path)
    if registry.problems:
        raise ConfigError(next(iter(registry.problems.values())))
    return registry.specs


def parse_entry(name: str, entry: Any, source: str = "config") -> UpstreamSpec:
    """One mcpServers entry as an UpstreamSpec; ``source`` names the file in error messages."""
    where = f"{source}: server {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object with a command or a url")
    command = entry.get("command")
    # Windsurf spells the remote address "serverUrl".
    url = entry.get("url", entry.get("serverUrl"))
    if command is not None and url is not None:
        raise ConfigError(f"{where} has both a command and a url; keep the one that starts the server")
    if command is not None:
        if not isinstance(command, str) or not command:
            raise ConfigError(f"{where}: command must be a non-empty string, got {command!r}")
        args = _string_list(entry.get("args", []), f"{where}: args")
        return UpstreamSpec(
            name=name,
            transport="stdio",
            command=[command, *args],
            env=_string_map(entry.get("env"), f"{where}: env"),
            cwd=_optional_string(entry.get("cwd"), f"{where}: cwd"),
        )
    if url is not None:
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{where}: url must be a non-empty string, got {url!r}")
        kind = entry.get("type", entry.get("transport", "http"))
        if kind not in REMOTE_TYPES:
            expected = ", ".join(repr(known) for known in REMOTE_TYPES)
            raise ConfigError(f"{where}: unknown type {kind!r} for a url entry; expected one of {expected}")
        problem = url_problem(url)
        if problem is not None:
            raise ConfigError(f"{where}: url {problem}")
        return UpstreamSpec(
            name=name,
            transport=REMOTE_TYPES[kind],
            url=url,
            headers=_string_map(entry.get("headers"), f"{where}: headers"),
        )
    raise ConfigError(f'{where} has neither "command" (a program to run) nor "url" (a remote server)')


def resolve_upstream(
    name: str,
    config_path: str | os.PathLike[str] | None = None,
    default_config: Path | None = None,
) -> UpstreamSpec:
    """The upstream called ``name``: from the config file if given (it wins), else a built-in one.

    Without ``config_path``, the desktop client's config that `mcptape wrap` edits
    (``default_config``, by default :func:`default_client_config_path`) is read when it
    exists, so ``--upstream files`` finds the client's "files" server. A broken default
    config does not hide the built-ins. Raises ConfigError listing the known names and
    suggesting ``--config FILE`` when there is no such upstream.
    """
    if config_path is not None:
        known = known_upstreams(config_path)
        _refuse_broken(name, config_path)
        if name in known:
            return known[name]
        raise ConfigError(
            f"unknown upstream {name!r}; known names (from {config_path} and the built-ins): {', '.join(known)}"
        )
    default = default_client_config_path() if default_config is None else default_config
    builtins = builtin_upstreams()
    if not default.is_file():
        if name in builtins:
            return builtins[name]
        raise ConfigError(
            f"unknown upstream {name!r}: no --config given and no desktop client config at {default}; "
            f"pass --config FILE (an mcpServers JSON file) or a built-in name ({', '.join(builtins)})"
        )
    try:
        known = known_upstreams(default)
    except ConfigError as exc:
        if name in builtins:
            return builtins[name]
        raise ConfigError(f"{exc} (read because no --config was given; pass --config FILE)") from None
    _refuse_broken(name, default)
    if name in known:
        return known[name]
    raise ConfigError(
        f"unknown upstream {name!r}: not in {default} (the desktop client's config, read because no --config "
        f"was given) nor built in; known names: {', '.join(known)}; pass --config FILE for another mcpServers file"
    )


def _refuse_broken(name: str, config_path: str | os.PathLike[str]) -> None:
    """Raise the complaint about ``name``'s entry when the file has one that does not parse."""
    problem = read_registry(config_path).problems.get(name)
    if problem is not None:
        raise ConfigError(problem)


def known_upstreams(
    config_path: str | os.PathLike[str] | None = None, *, db: str | None = None
) -> dict[str, UpstreamSpec]:
    """Every upstream a name can refer to: the config file's entries first, then the built-ins.

    Entries that do not parse are left out (``read_registry`` says why). ``db``: the
    database the built-in ``recordings`` reads (see :func:`builtin_upstreams`).
    """
    configured = read_registry(config_path).specs if config_path is not None else {}
    builtins = {
        name: spec for name, spec in builtin_upstreams(db, config_path).items() if name not in configured
    }
    return {**configured, **builtins}


def default_client_config_path(
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Path:
    """Where Claude Desktop keeps its config file on this machine (it may not exist yet).

    macOS: ``~/Library/Application Support/Claude/claude_desktop_config.json``;
    Windows: ``%APPDATA%\\Claude\\claude_desktop_config.json``; elsewhere
    ``$XDG_CONFIG_HOME/Claude/claude_desktop_config.json`` (``~/.config`` by default).
    The arguments exist for tests; by default they describe the running system.
    """
    platform = sys.platform if platform is None else platform
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform.startswith("win"):
        appdata = environ.get("APPDATA")
        base = Path(appdata) if appdata else home / "AppData" / "Roaming"
    else:
        xdg = environ.get("XDG_CONFIG_HOME")
        # The XDG spec says a relative value is invalid and must be ignored.
        base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".config"
    return base / "Claude" / "claude_desktop_config.json"


def _string_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings, got {value!r}")
    return list(value)


def _string_map(value: Any, what: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{what} must be an object of string values, got {value!r}")
    return dict(value)


def _optional_string(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{what} must be a string, got {value!r}")
    return value
