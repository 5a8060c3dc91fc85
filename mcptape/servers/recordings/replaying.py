"""The ``replay`` tool's two halves that are not the replay itself: the tape, and the registered server.

A replay runs only a server of the registry (the built-ins and the ``mcpServers``
entries of ``--config``, or of the desktop client's config as ``record --upstream``
reads it): a name, never a command. It records nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcptape.servers.recordings.arguments import ToolFailure

if TYPE_CHECKING:
    from mcptape.replay.run import ReplayPlan
    from mcptape.replay.tape import Tape


def load_tape(store: Any, ref: str) -> Tape:
    """The recorded session ``ref`` names, as a tape (blocking: on a worker thread)."""
    from sqlalchemy.exc import SQLAlchemyError

    from mcptape.replay.tape import TapeError, load_session

    try:
        return load_session(store, ref)
    except TapeError as exc:
        raise ToolFailure(str(exc)) from None
    except SQLAlchemyError as exc:
        from mcptape.store.describe import database_message

        raise ToolFailure(f"cannot read the recording: {database_message(exc)}") from None


def replay_plan(name: str, config_path: str | None, timeout: float) -> ReplayPlan:
    """How to replay against the registered server ``name``: a fresh process, or a new session with a URL."""
    from mcptape.config.registry import ConfigError, resolve_upstream
    from mcptape.replay.run import ReplayPlan

    try:
        spec = resolve_upstream(name, config_path)
    except ConfigError as exc:
        raise ToolFailure(f"replay runs registered servers only: {exc}") from None
    from mcptape.proxy.early_signals import STOP_SIGNALS

    # A signal mid-replay shuts the replayed server down before `mcptape mcp` ends: dying
    # at once would leave it running (in a process group of its own, it gets no signal).
    common: dict[str, Any] = {
        "db": None,
        "record": False,
        "timeout": timeout,
        "progress": False,
        "signals": STOP_SIGNALS,
    }
    if spec.transport == "stdio" and spec.command:
        from mcptape.config.wrap import wrapped_split

        argv = list(spec.command)
        # An entry `mcptape wrap` rewrote runs a recorder: replay its server, not a recorder of it.
        split = wrapped_split({"command": argv[0], "args": argv[1:]})
        if split is not None and split[1]:
            argv = split[1]
        return ReplayPlan(argv=argv, env=spec.env, cwd=spec.cwd, description=spec.describe(), **common)
    from mcptape.proxy.http.headers import HeaderError, expand_headers

    assert spec.url is not None
    try:
        headers = expand_headers(spec.headers)
    except HeaderError as exc:
        raise ToolFailure(f"upstream {name!r}: {exc}") from None
    url, transport = spec.url, spec.transport

    def link() -> Any:
        from mcptape.proxy.http.upstream import remote_link

        return remote_link(url, transport, headers)

    return ReplayPlan(
        argv=[],
        env=None,
        cwd=None,
        description=spec.describe(),
        upstream_link=link,
        transport=transport,
        **common,
    )
