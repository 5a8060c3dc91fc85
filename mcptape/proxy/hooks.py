"""The hooks an addon may implement, one documented entry each (mitmproxy's hooks.py, kept small).

An addon is any object with methods named after these hooks; each is optional and may
be sync or async unless noted. :class:`mcptape.proxy.addonmanager.AddonManager` finds them
by name, and refuses an addon with a public method whose name is a near miss of a
hook (``frame_don``), so a typo fails when the addon is added instead of never running.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HookSpec:
    """A hook's name, its arguments and what it may do."""

    name: str
    args: str
    doc: str
    may_be_async: bool = True


HOOK_SPECS: tuple[HookSpec, ...] = (
    HookSpec(
        "session_start",
        "(session: SessionContext)",
        "The relay is about to carry frames. Awaited before the first frame is delivered.",
    ),
    HookSpec(
        "frame",
        "(flow: Flow)",
        "A frame arrived from a peer. The addon may flow.respond(...), respond_error(...), "
        "reply(...), replace(...), drop() or hold(). Addons run in order; once one has "
        "answered, dropped or held a flow, later ones are not asked. Runs on the thread that "
        "delivered the frame (a link's reader thread or the event loop): keep it quick and "
        "thread-safe. Returning an awaitable (or being async) makes the relay finish the "
        "flow on the event loop while the link waits.",
    ),
    HookSpec(
        "frame_done",
        "(flow: Flow)",
        "The decision is made and the frame is about to be forwarded (or not). Observers "
        "such as the recorder live here: they see every frame that arrived, whatever the "
        "deciders did, and the frames mcptape writes itself (flow.injected). An awaitable "
        "returned slows the relay until it is done (back-pressure).",
    ),
    HookSpec(
        "event",
        "(session: SessionContext, kind: str, text: str | None, data: object)",
        "Something that is not a frame happened (stderr line, process exit, error, HTTP "
        "session created). Sync only; may be called from any thread.",
        may_be_async=False,
    ),
    HookSpec(
        "session_end",
        "(session: SessionContext, outcome: Outcome)",
        "The session is over: both links are closed. Awaited; must not block the loop.",
    ),
)

HOOKS: tuple[str, ...] = tuple(spec.name for spec in HOOK_SPECS)
