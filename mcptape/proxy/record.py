"""`record` assembled: our stdio as the client link, a spawned server as the upstream, the recorder.

This is the thin imperative shell around the relay for the ``record`` command: it
starts the server at once, opens the store in the background, installs signal
handlers, runs the relay and turns the outcome into an exit status.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcptape.proxy.addonmanager import AddonManager, Outcome, SessionContext
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.addons.recording import BackgroundStore, SessionRow
from mcptape.proxy.link import Link, LinkClosed, shell_status
from mcptape.proxy.links.process import ProcessLink, SpawnError
from mcptape.proxy.links.stdio import open_stdio_link
from mcptape.proxy.relay import Relay
from mcptape.terminal import say as _say

if TYPE_CHECKING:
    from mcptape.rules.rules import Rules

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class RecordPlan:
    """What ``mcptape record`` was asked to do."""

    argv: list[str]
    env: dict[str, str] | None
    cwd: str | None
    description: str
    name: str | None
    db: str | None
    grace: float = 2.0
    answer_wait: float = 0.0  # see Relay: the server may answer after the client's end
    echo_stderr: bool = True
    on_store_error: str = "fail"
    rules: Rules | None = None  # injection rules: mcptape answers server requests they match
    declare_capabilities: bool = False
    # A remote upstream (``record --url``): makes the server-facing link instead of spawning argv.
    upstream_link: Callable[[], Link] | None = None
    transport: str = "stdio->stdio"


def _redacted(argv: list[str], description: str) -> tuple[list[str], str]:
    """The command line as it may be stored: secret-looking values replaced by placeholders."""
    import shlex

    from mcptape.redact import redact_argv

    safe = list(redact_argv(argv))
    return safe, description if safe == argv else shlex.join(safe)


async def run_record(plan: RecordPlan) -> int:
    """Run one recorded stdio session; returns mcptape's exit status."""
    safe_argv, description = _redacted(plan.argv, plan.description)
    recorder = Recorder(forwards_without_store=plan.on_store_error != "fail")
    transport = plan.transport
    session = SessionContext(None, "record", transport, description, plan.name)
    injector = None
    if plan.rules:
        from mcptape.proxy.addons.injector import Injector

        injector = Injector(plan.rules, declare=plan.declare_capabilities)
    # The injector decides in its frame hook (the recorder has none) and starts retries in
    # frame_done, after the recorder's, so a retry is recorded after the result it answers.
    addons = AddonManager([recorder, injector] if injector is not None else [recorder])
    row = SessionRow("record", plan.name, transport, description)
    try:
        client = open_stdio_link()
    except LinkClosed as exc:
        _say(f"error: {exc}")
        return 2
    server: Link
    if plan.upstream_link is not None:
        server = plan.upstream_link()
        from mcptape.proxy.http.upstream import AutoLink

        if isinstance(server, AutoLink):  # record the transport actually used, not "auto"

            def settled(actual: str) -> None:
                session.transport = f"stdio->{actual}"
                recorder.update(transport=session.transport)

            server.on_settled = settled
        store = BackgroundStore(plan.db, row, recorder).start()
        recorder.event(session, "upstream_connect", description, {"transport": plan.transport})
        return await _relay_and_finish(plan, client, server, addons, session, store, description)
    try:
        server = ProcessLink.spawn(plan.argv, env=plan.env, cwd=plan.cwd, echo_stderr=plan.echo_stderr)
    except SpawnError as exc:
        _say(f"error: {exc}")
        store = BackgroundStore(plan.db, row, recorder).start()
        recorder.event(session, "error", str(exc), {"argv": safe_argv})
        recorder.session_end(session, Outcome("error", None, str(exc)))
        await store.opened()
        store.finish()
        return 2
    store = BackgroundStore(plan.db, row, recorder).start()
    recorder.event(
        session, "process_start", description, {"pid": server.pid, "argv": safe_argv, "cwd": plan.cwd}
    )
    return await _relay_and_finish(plan, client, server, addons, session, store, description)


async def _relay_and_finish(
    plan: RecordPlan,
    client: Link,
    server: Link,
    addons: AddonManager,
    session: SessionContext,
    store: BackgroundStore,
    description: str,
) -> int:
    if _isatty(0):
        _say(
            f"recording {description} into {store.where()}. This speaks MCP (JSON-RPC) on stdin/stdout "
            "and is meant to be started by an MCP client (see `mcptape wrap`); Ctrl-C stops it."
        )
    relay = Relay(client, server, addons, session, grace=plan.grace, answer_wait=plan.answer_wait)
    for addon in addons.addons:  # addons that send requests of their own (the injector's retries)
        use_relay = getattr(addon, "use_relay", None)
        if use_relay is not None:
            use_relay(relay)
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []
    for signum in SIGNALS:

        def on_signal(signum: int = signum) -> None:
            stopped_by.append(signum)
            relay.stop(signal.Signals(signum).name)

        loop.add_signal_handler(signum, on_signal)

    store_failed = asyncio.ensure_future(_watch_store(store, relay, plan.on_store_error))
    try:
        outcome = await relay.run()
    finally:
        store_failed.cancel()
    # Writing what is left may wait for a database another process holds locked: a
    # second signal gives up on it, said plainly, instead of a traceback.
    for signum in SIGNALS:
        loop.add_signal_handler(signum, _late_signal, signum, stopped_by)
    try:
        ok = await store.afinish()
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
    code = exit_status(outcome, stopped_by)
    if store.error and plan.on_store_error == "fail":
        return 2
    if not ok and code == 0:
        _say(f"error: not every frame of this session could be recorded into {store.where()}")
        return 1
    return code


def _late_signal(signum: int, stopped_by: list[int]) -> None:
    """A signal while the last frames are written: the first is noted, a second gives up."""
    stopped_by.append(signum)
    if len(stopped_by) > 1:
        _give_up(signum)


def _give_up(signum: int) -> None:
    _say(
        f"error: stopped by {signal.Signals(signum).name} while writing the recording; what was not written is lost"
    )
    os._exit(128 + signum)


async def _watch_store(store: BackgroundStore, relay: Relay, on_error: str) -> None:
    await store.opened()
    if store.error and on_error == "fail":
        relay.stop("the recording database could not be opened")


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def exit_status(outcome: Outcome, stopped_by: list[int]) -> int:
    """Our exit status: see ``mcptape record --help``."""
    if stopped_by:
        return 128 + stopped_by[0]
    if outcome.ended_by == "signal":
        return 2  # stopped for a reason of our own (the store failed)
    if outcome.exit_code is None:
        return 0 if outcome.status in ("ok", "closed") else 1
    if outcome.ended_by == "client" and outcome.stopped_by_us:
        return 0
    return shell_status(outcome.exit_code)
