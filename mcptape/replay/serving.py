"""`serve`: our stdio as the client link, the tape as the server (the session assembled by :mod:`mcptape.assemble`).

The session is recorded (mode ``serve``, ``replay_of`` the recording) when a database
is in play, so what the client under test asked, and how it answered the replayed
server requests, can be read back with SQL like any session.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from mcptape.assemble import OwnStore, SessionPlan, StoreSource, assemble
from mcptape.proxy.link import Link, LinkClosed
from mcptape.proxy.links.process import ProcessLink, SpawnError
from mcptape.proxy.links.stdio import open_stdio_link
from mcptape.replay.mock import TapeServer
from mcptape.replay.normalise import Normaliser
from mcptape.replay.pace import Pace
from mcptape.replay.tape import Tape
from mcptape.terminal import say as _say

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class ServePlan:
    """What ``mcptape serve`` was asked to do."""

    tape: Tape
    db: str | None
    record: bool
    strict: bool = False
    forward_argv: list[str] | None = None
    forward_env: dict[str, str] | None = None
    forward_cwd: str | None = None
    # A remote server for --on-miss forward (--url, or a remote --upstream entry): a new link to
    # it per served session, and what to call it (its URL, redacted).
    forward_link: Callable[[], Link] | None = None
    forward_description: str | None = None
    normaliser: Normaliser = field(default_factory=Normaliser)
    grace: float = 2.0
    pace: Pace = field(default_factory=Pace)  # how the messages of one answer are spaced
    otlp: str | None = None  # an OTLP/HTTP receiver: export spans and metrics there

    def forward_target(self) -> str:
        """The server misses are forwarded to, as the user named it."""
        if self.forward_description is not None:
            return self.forward_description
        return shlex.join(self.forward_argv or [])


def open_fallback(plan: ServePlan) -> Link | None:
    """The link to the real server for --on-miss forward (a new one per served session); None without.

    Raises :class:`SpawnError` when the server's command cannot be started.
    """
    if plan.forward_link is not None:
        return plan.forward_link()
    if plan.forward_argv:
        return ProcessLink.spawn(plan.forward_argv, env=plan.forward_env, cwd=plan.forward_cwd)
    return None


def forward_problem(plan: ServePlan) -> str | None:
    """Why the --on-miss forward command could not start (not found, not executable); None if it can.

    ``serve --listen`` starts one per client session: checked once before serving, so a
    typo is an error at start-up rather than an error every client gets.
    """
    if plan.forward_link is not None or not plan.forward_argv:
        return None
    command = plan.forward_argv[0]
    if plan.forward_cwd is not None and not os.path.isdir(plan.forward_cwd):
        return f"the server for --on-miss forward cannot be started: {plan.forward_cwd!r} not found"
    if os.sep in command:
        path = os.path.join(plan.forward_cwd or os.curdir, command)
        found = os.path.isfile(path) and os.access(path, os.X_OK)
    else:
        search = (plan.forward_env or {}).get("PATH", os.environ.get("PATH", os.defpath))
        found = shutil.which(command, path=search) is not None
    if found:
        return None
    return f"the server for --on-miss forward cannot be started: {command!r} not found or not executable"


def serve_plan(plan: ServePlan, downstream: str, store: StoreSource | None = None) -> SessionPlan:
    """The session a served client gets: mode ``serve``, ``replay_of`` the recording.

    ``store``: where it is recorded (``serve --listen`` shares one store); by default a
    store of its own when ``plan.record``.
    """
    if store is None and plan.record:
        store = OwnStore(plan.db)
    return SessionPlan(
        "serve",
        f"{downstream}->tape",
        f"tape {plan.tape.source}",
        replay_of=plan.tape.session_id,
        store=store if plan.record else None,
        grace=plan.grace,
        otlp=plan.otlp,
    )


async def run_serve(plan: ServePlan, client: Link | None = None) -> int:
    """Serve the tape to the client on our stdio (or ``client``) until it leaves; the exit status."""
    try:
        fallback = open_fallback(plan)
    except SpawnError as exc:
        _say(f"error: {exc}")
        return 2
    if client is None:
        try:
            client = open_stdio_link()
        except LinkClosed as exc:
            _say(f"error: {exc}")
            return 2
    tape_server = TapeServer(plan.tape, normaliser=plan.normaliser, fallback=fallback, pace=plan.pace)
    session = assemble(serve_plan(plan, "stdio"), client, tape_server)
    await session.run(SIGNALS)
    if not await session.finish_store():
        _say(f"warning: this session could not be recorded fully into {session.where()}")
    stopped_by = session.stopped_by
    if stopped_by:
        return 128 + stopped_by[0]
    return strict_failures(plan, [tape_server])


def strict_failures(plan: ServePlan, tapes: list[TapeServer]) -> int:
    """Say what matched nothing and what was forwarded; 1 under --strict when something went unused or missed.

    ``tapes``: one per client session (``serve --listen`` plays a fresh tape to each); a
    recorded request counts as asked for when any session asked for it.
    """
    code = 0
    misses = sum(len(t.misses) for t in tapes)
    forwarded = sum(t.forwarded for t in tapes)
    if misses:
        _say(f"{misses} request(s) matched nothing on the tape")
    if forwarded:
        _say(f"{forwarded} request(s) not on the tape were forwarded to {plan.forward_target()}")
    if plan.strict:
        used = {e.index for t in tapes for e in t.book.entries if e.used}
        entries = tapes[0].book.entries if tapes else TapeServer(plan.tape).book.entries
        unused = [e for e in entries if e.index not in used]
        if unused:
            listed = ", ".join(f"#{e.index} {e.method}" for e in unused[:10])
            _say(f"error: --strict: {len(unused)} recorded request(s) were never asked for: {listed}")
            code = 1
        if misses:
            code = 1
    return code
