"""The one place a session is built: its two links, the addon chain in one order, its store, its metadata.

Every mode is a client-facing link, a relay and a server-facing link (shared/DESIGN.md).
A mode says what it wants as a :class:`SessionPlan` (which mode, how the session is
described and recorded, which rules answer the server's requests) and calls
:func:`assemble` with its two links; what comes back (:class:`Session`) runs the relay
and writes the recording. ``record``, the gateway, ``call``, ``replay``, ``serve`` (stdio
and HTTP) and the gateway's pass-through (which records without a relay) all come here.

The addon chain, built by :func:`default_addons` in this order (mitmproxy's
``default_addons()`` is the model); a new addon is one line there:

1. **the recorder** (:mod:`mcptape.proxy.addons.recorder`): a ``frame_done`` observer.
   It sees every frame as it arrived and what the deciders made of it (answered,
   replaced, dropped), and the frames mcptape writes itself. It comes before every
   other ``frame_done`` hook, so that what a later addon does (the injector's retry)
   is recorded after the frame that caused it.
2. **the injector** (:mod:`mcptape.proxy.addons.injector`), with injection rules only:
   decides in ``frame`` (answers a server's sampling, elicitation or roots request in
   the client's place) and starts its retries of ``input_required`` results in
   ``frame_done``, after the recorder has recorded the result they answer.
3. **the faults** (:mod:`mcptape.proxy.addons.faults`), with fault rules only: decides
   in ``frame`` (drops, holds, answers with an error, replaces) and, in ``frame_done``,
   records the fault beside the frame (the recorder has given it its ``seq``) and
   schedules what it sends late. The last decider, because a fault stands for trouble
   on the wire between mcptape and a peer: it touches what mcptape would put on the
   wire, after the injector has answered what it answers in the client's place (mcptape's own
   answers are never faulted), and the injector sees every frame as the peer sent it,
   so its bookkeeping (calls in flight, retries) is whole whatever a fault does.
4. **the OTLP exporter** (:mod:`mcptape.proxy.addons.otlp`), with ``--otlp URL`` only:
   a ``frame_done`` observer that queues each frame for OpenTelemetry export (O(1); the
   spans are made on its sink's thread). Last, so that it sees what every decider did;
   its drop count is written through the recorder as an ``otlp_dropped`` event.

How a frame goes out on its destination link (an HTTP upstream's method and headers, a
client-facing HTTP stream and event id) is not an addon: the relay asks the link
(:meth:`mcptape.proxy.link.LinkBase.prepare`) between the two hook phases.

Stores (:class:`StoreSource`): a session either opens a database of its own on a
thread (:class:`OwnStore`: ``record``, ``call``, ``replay``, ``serve`` on stdio) or
takes a row in the one store of a process that serves many sessions (the gateway's
:class:`~mcptape.gateway.store.GatewayStore`). Either way the first frames are
forwarded at once and the recorder holds them until the row exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mcptape.proxy.addonmanager import AddonManager, Outcome, SessionContext
from mcptape.proxy.addons.recorder import Recorder
from mcptape.proxy.addons.recording import BackgroundStore, SessionRow
from mcptape.proxy.early_signals import take_early
from mcptape.proxy.hooks import Event, SessionEnd, SessionStart
from mcptape.proxy.link import Link
from mcptape.proxy.relay import Relay

if TYPE_CHECKING:
    from mcptape.proxy.addons.faults import Faults
    from mcptape.proxy.addons.injector import Injector
    from mcptape.rules.faults import FaultSet
    from mcptape.rules.rules import Rules

MODES = ("record", "proxy", "call", "client", "replay", "serve", "probe")


class SessionStore(Protocol):
    """One session's way into a store: its row, its writer, and how its recording ends."""

    session_id: str | None
    error: str | None

    def start(self) -> object:
        """Begin opening (on a thread): the row is created and the recorder attached."""

    async def opened(self) -> None:
        """Wait, without blocking the loop, until the row exists or the store failed."""

    async def afinish(self) -> bool:
        """Everything of the session written; True when nothing was lost."""

    def where(self) -> str:
        """The database, as a person named it (for messages)."""


class StoreSource(Protocol):
    """Where a session's recording goes: gives each session its :class:`SessionStore`."""

    def session_store(self, recorder: Recorder, row: SessionRow) -> SessionStore: ...


@dataclass(frozen=True)
class OwnStore:
    """A database this session opens for itself (``db``: a path, a URL, or None for the default)."""

    db: str | None

    def session_store(self, recorder: Recorder, row: SessionRow) -> SessionStore:
        return BackgroundStore(self.db, row, recorder)


@dataclass
class SessionPlan:
    """What a mode wants of a session: how it is described and recorded, and what answers for the client.

    ``transport`` is ``DOWNSTREAM->UPSTREAM`` (``stdio->stdio``, ``http->auto``,
    ``tape->stdio``): an upstream that settles its transport at run time (``auto``) has
    the second half replaced once it is known. ``upstream`` describes the server as it
    may be stored (secrets already redacted). ``store`` None: nothing is recorded.
    """

    mode: str
    transport: str
    upstream: str
    name: str | None = None
    replay_of: str | None = None
    store: StoreSource | None = None
    rules: Rules | None = None
    declare_capabilities: bool = False
    faults: FaultSet | None = None  # fault rules: frames mcptape disturbs on purpose
    # Whether the session goes on when its store cannot be opened (record's
    # --on-store-error forward, and every mode but record): what the warning says.
    forwards_without_store: bool = True
    grace: float = 2.0
    answer_wait: float = 0.0  # see Relay: the server may answer after the client's end
    # A fleet: the gateway replica that runs the session, and the conversation its rows
    # share when one client session is recorded by several replicas (see gateway/sealed.py).
    replica: str | None = None
    conversation_id: str | None = None
    row: dict[str, Any] = field(default_factory=dict)  # more columns of the session row
    otlp: str | None = None  # an OTLP/HTTP receiver's URL: export spans and metrics there

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {', '.join(MODES)}")


def default_addons(plan: SessionPlan, recorder: Recorder | None) -> list[object]:
    """The addon chain of a session, in its one order (see the module docstring for why)."""
    addons: list[object] = []
    if recorder is not None:
        addons.append(recorder)
    if plan.rules:
        from mcptape.proxy.addons.injector import Injector

        addons.append(Injector(plan.rules, declare=plan.declare_capabilities))
    if plan.faults:
        from mcptape.proxy.addons.faults import Faults

        addons.append(Faults(plan.faults))
    if plan.otlp:
        from mcptape.proxy.addons.otlp import OtlpExporter

        addons.append(OtlpExporter(plan.otlp, recorder))
    return addons


@dataclass(eq=False)
class Session:
    """An assembled session: its addons, its recorder and store, and (with two links) its relay."""

    plan: SessionPlan
    context: SessionContext
    addons: AddonManager
    recorder: Recorder | None
    store: SessionStore | None
    relay: Relay | None = None
    stopped_by: list[int] = field(default_factory=list)  # signals that stopped the session
    _store_started: bool = False

    # -- the store --------------------------------------------------------------------

    def start_store(self) -> None:
        """Open the store now (on its thread), if it is not opening already. Idempotent."""
        if self.store is not None and not self._store_started:
            self._store_started = True
            self.store.start()

    async def finish_store(self) -> bool:
        """Write everything of the session and close its way into the store; True when nothing was lost."""
        if self.store is None:
            return True
        self.start_store()
        return await self.store.afinish()

    def where(self) -> str | None:
        return self.store.where() if self.store is not None else None

    # -- what is not a frame ---------------------------------------------------------------

    def event(self, kind: str, text: str | None, data: object = None) -> None:
        """Record an event of the session (any thread)."""
        self.addons.call_sync(Event(self.context, kind, text, data))

    def end(self, outcome: Outcome) -> None:
        """End a session that has no relay (it could not start, or passes through without one)."""
        self.addons.call_soon(SessionEnd(self.context, outcome))

    def failed_to_start(self, error: str, data: object = None) -> None:
        """The upstream could not be started or reached: recorded like any session, so
        ``mcptape sessions`` shows why."""
        self.start_store()
        self.event("error", error, data)
        self.end(Outcome("error", None, error))

    # -- running --------------------------------------------------------------------------

    async def run(self, signals: Sequence[int] = ()) -> Outcome:
        """Relay until the session ends; each of ``signals`` stops it (noted in ``stopped_by``)."""
        relay = self.relay
        assert relay is not None, "a session without links has no relay to run"
        loop = asyncio.get_running_loop()
        for signum in signals:
            loop.add_signal_handler(signum, self._signalled, signum)
        # One that came while the process started up stops the session as soon as it runs.
        for signum in take_early():
            if signum in signals:
                loop.call_soon(self._signalled, signum)
        try:
            return await relay.run()
        finally:
            for signum in signals:
                with contextlib.suppress(Exception):
                    loop.remove_signal_handler(signum)

    def _signalled(self, signum: int) -> None:
        self.stopped_by.append(signum)
        assert self.relay is not None
        self.relay.stop(signal.Signals(signum).name)

    def _transport_settled(self, actual: str) -> None:
        """The upstream chose its transport at run time (``auto``): the row says which."""
        downstream = self.context.transport.rpartition("->")[0] or self.context.transport
        self.context.transport = f"{downstream}->{actual}"
        if self.recorder is not None:
            self.recorder.update(transport=self.context.transport)


def assemble(
    plan: SessionPlan,
    client: Link | None = None,
    server: Link | None = None,
    *,
    start_store: bool = True,
) -> Session:
    """Build the session ``plan`` describes between ``client`` and ``server``.

    Without links (the gateway's pass-through), the session records what its caller
    hands to ``session.addons``. ``start_store`` False leaves opening the store to the
    caller (``call`` opens it once its first frame is sent, so that importing SQLAlchemy
    never delays the first request).
    """
    recorder = Recorder(forwards_without_store=plan.forwards_without_store) if plan.store else None
    context = SessionContext(None, plan.mode, plan.transport, plan.upstream, plan.name)
    addons = AddonManager(default_addons(plan, recorder))
    store = None
    if plan.store is not None and recorder is not None:
        extra = dict(plan.row)
        if plan.replica is not None:
            extra["replica"] = plan.replica
        if plan.conversation_id is not None:
            extra["conversation_id"] = plan.conversation_id
        row = SessionRow(plan.mode, plan.name, plan.transport, plan.upstream, plan.replay_of, extra)
        store = plan.store.session_store(recorder, row)
    session = Session(plan, context, addons, recorder, store)
    if server is not None:
        server.watch_transport(session._transport_settled)
    if client is not None and server is not None:
        relay = Relay(client, server, addons, context, grace=plan.grace, answer_wait=plan.answer_wait)
        session.relay = relay
        for addon in _using_relay(plan, addons):
            addon.use_relay(relay)  # the injector's retries, the faults' late frames and cuts
    elif client is None and server is None:
        # Without a relay to start it (the pass-through records what its caller hands the
        # addons), the session starts now.
        addons.call_soon(SessionStart(context))
    if start_store:
        session.start_store()
    return session


def _using_relay(plan: SessionPlan, addons: AddonManager) -> list[Injector | Faults]:
    """The addons that send frames of their own through the relay."""
    if not (plan.rules or plan.faults):
        return []  # nothing to import: a plain recorder starts sooner
    from mcptape.proxy.addons.faults import Faults
    from mcptape.proxy.addons.injector import Injector

    return [a for a in addons.addons if isinstance(a, Injector | Faults)]
