"""The hooks an addon may implement: each a small dataclass of its arguments, its docstring its documentation.

mitmproxy's ``hooks.py`` is the model. An addon is any object with methods named after
these hooks (:attr:`Hook.name`); each is optional and may be sync or async unless the
hook says otherwise. The relay calls lifecycle hooks by passing an event object to
:meth:`mcptape.proxy.addonmanager.AddonManager.call`, which calls each addon's method
with the event's fields; the two frame hooks run on the hot path
(:meth:`~mcptape.proxy.addonmanager.AddonManager.run_frame`) with the flow alone.
The manager refuses an addon with a public method whose name is a near miss of a hook
(``frame_don``), so a typo fails when the addon is added instead of never running.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from mcptape.proxy.flow import Flow


@dataclass
class SessionContext:
    """What addons know about the session being relayed."""

    session_id: str | None
    mode: str
    transport: str
    upstream: str
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """How a session ended.

    ``status``: ``ok`` (the server ended the session cleanly), ``closed`` (the client
    left and the server was shut down), ``error`` (the server died or failed),
    ``interrupted`` (a signal stopped mcptape). ``exit_code`` is the server process's
    returncode where there is one (negative: killed by that signal). ``ended_by``:
    ``server``, ``client`` or ``signal``. ``stopped_by_us``: mcptape had to signal the
    server (it did not exit on its own after its stdin closed).
    """

    status: str
    exit_code: int | None = None
    error: str | None = None
    ended_by: str = "server"
    stopped_by_us: bool = False


@dataclass(frozen=True)
class Hook:
    """Base of the hooks: ``name`` is the addon method it calls; the fields are its arguments."""

    name: ClassVar[str]
    may_be_async: ClassVar[bool] = True

    def args(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class SessionStart(Hook):
    """The relay is about to carry frames. Awaited before the first frame is delivered."""

    name: ClassVar[str] = "session_start"
    session: SessionContext


@dataclass(frozen=True)
class FrameArrived(Hook):
    """A frame arrived from a peer. The addon may ``flow.respond(...)``, ``respond_error(...)``,
    ``reply(...)``, ``replace(...)``, ``drop()`` or ``hold()``. Addons run in order; once one
    has answered, dropped or held a flow, later ones are not asked. Runs on the thread that
    delivered the frame (a link's reader thread or the event loop): keep it quick and
    thread-safe. Returning an awaitable (or being async) makes the relay finish the flow on
    the event loop while the link waits."""

    name: ClassVar[str] = "frame"
    flow: Flow


@dataclass(frozen=True)
class FrameDone(Hook):
    """The decision is made and the frame is about to be forwarded (or not). Observers such
    as the recorder live here: they see every frame that arrived, whatever the deciders
    did, and the frames mcptape writes itself (``flow.injected``). An awaitable returned
    slows the relay until it is done (back-pressure)."""

    name: ClassVar[str] = "frame_done"
    flow: Flow


@dataclass(frozen=True)
class Event(Hook):
    """Something that is not a frame happened (stderr line, process exit, error, HTTP session
    created). Sync only; may be called from any thread."""

    name: ClassVar[str] = "event"
    may_be_async: ClassVar[bool] = False
    session: SessionContext
    kind: str
    text: str | None
    data: object


@dataclass(frozen=True)
class SessionEnd(Hook):
    """The session is over: both links are closed. Awaited; must not block the loop."""

    name: ClassVar[str] = "session_end"
    session: SessionContext
    outcome: Outcome


ALL_HOOKS: tuple[type[Hook], ...] = (SessionStart, FrameArrived, FrameDone, Event, SessionEnd)
HOOKS: tuple[str, ...] = tuple(hook.name for hook in ALL_HOOKS)
