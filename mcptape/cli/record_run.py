"""`record`: our stdio as the client link, a spawned server (or a remote one) as the upstream.

The thin imperative shell of the ``record`` command around the one assembly
(:mod:`mcptape.assemble`): it starts the server at once (the store opens in the
background meanwhile), runs the session until a side ends or a signal comes, writes
what is left (a second signal gives up on it) and turns the outcome into an exit status.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcptape.assemble import OwnStore, Session, SessionPlan, SessionStore, assemble
from mcptape.proxy.addonmanager import Outcome
from mcptape.proxy.early_signals import STOP_SIGNALS
from mcptape.proxy.heap import settle_heap
from mcptape.proxy.link import Link, LinkClosed, shell_status
from mcptape.proxy.links.process import ProcessLink, SpawnError
from mcptape.proxy.links.stdio import open_stdio_link
from mcptape.proxy.relay import Relay
from mcptape.redact import redact_command
from mcptape.terminal import say as _say

if TYPE_CHECKING:
    from mcptape.rules.faults import FaultSet
    from mcptape.rules.rules import Rules

SIGNALS = STOP_SIGNALS


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
    faults: FaultSet | None = None  # fault rules: frames mcptape disturbs on purpose
    # A remote upstream (``record --url``): makes the server-facing link instead of spawning argv.
    upstream_link: Callable[[], Link] | None = None
    transport: str = "stdio->stdio"
    otlp: str | None = None  # an OTLP/HTTP receiver: export spans and metrics there


async def run_record(plan: RecordPlan) -> int:
    """Run one recorded stdio session; returns mcptape's exit status."""
    safe_argv, description = redact_command(plan.argv, plan.description)
    session_plan = SessionPlan(
        "record",
        plan.transport,
        description,
        name=plan.name,
        store=OwnStore(plan.db),
        rules=plan.rules,
        declare_capabilities=plan.declare_capabilities,
        faults=plan.faults,
        forwards_without_store=plan.on_store_error != "fail",
        grace=plan.grace,
        answer_wait=plan.answer_wait,
        otlp=plan.otlp,
    )
    try:
        client = open_stdio_link()
    except LinkClosed as exc:
        _say(f"error: {exc}")
        return 2
    server: Link
    if plan.upstream_link is not None:
        server = plan.upstream_link()
        session = assemble(session_plan, client, server)
        session.event("upstream_connect", description, {"transport": plan.transport})
        return await _relay_and_finish(plan, session, description)
    try:
        server = ProcessLink.spawn(plan.argv, env=plan.env, cwd=plan.cwd, echo_stderr=plan.echo_stderr)
    except SpawnError as exc:
        _say(f"error: {exc}")
        failed = assemble(session_plan)
        failed.failed_to_start(str(exc), {"argv": safe_argv})
        await failed.finish_store()
        return 2
    # Assembled once the server runs: the store opens while it starts.
    session = assemble(session_plan, client, server)
    session.event("process_start", description, {"pid": server.pid, "argv": safe_argv, "cwd": plan.cwd})
    return await _relay_and_finish(plan, session, description)


async def _relay_and_finish(plan: RecordPlan, session: Session, description: str) -> int:
    store = session.store
    assert store is not None and session.relay is not None
    if _isatty(0):
        _say(
            f"recording {description} into {store.where()}. This speaks MCP (JSON-RPC) on stdin/stdout "
            "and is meant to be started by an MCP client (see `mcptape wrap`); Ctrl-C stops it."
        )
    loop = asyncio.get_running_loop()
    store_failed = asyncio.ensure_future(_watch_store(store, session.relay, plan.on_store_error))
    try:
        outcome = await session.run(SIGNALS)
    finally:
        store_failed.cancel()
    # Writing what is left may wait for a database another process holds locked: a
    # second signal gives up on it, said plainly, instead of a traceback.
    stopped_by = session.stopped_by
    for signum in SIGNALS:
        loop.add_signal_handler(signum, _late_signal, signum, stopped_by)
    try:
        ok = await session.finish_store()
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
    code = exit_status(outcome, stopped_by)
    if store.error and plan.on_store_error == "fail":
        return 2
    unreached = session.relay.server_end
    if not stopped_by and unreached is not None and unreached.reason == "unreachable":
        # As a server command that cannot start: said, and exit 2 (the client got it as an error too).
        _say(f"error: {unreached.detail}")
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


async def _watch_store(store: SessionStore, relay: Relay, on_error: str) -> None:
    await store.opened()
    # Started up: imports done, the store open. What exists now stays for the whole session.
    settle_heap()
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
