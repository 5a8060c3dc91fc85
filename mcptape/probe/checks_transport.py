"""Scenarios of the transport: JSON-RPC batches (2025-03-26), resuming a dropped stream with
``Last-Event-ID`` and ending a session with DELETE (streamable HTTP)."""

from __future__ import annotations

from mcptape.client.errors import ClientError, HttpError, RequestTimeout
from mcptape.probe.checks_tools import LONG_RUNNING
from mcptape.probe.context import Failed, NotOffered, Probe, failure_of
from mcptape.wire import protocol as p

BATCH_REVISION = "2025-03-26"
BATCH_WAIT = 5.0


async def batch(probe: Probe) -> str:
    """At 2025-03-26, ping and tools/list in one batch: both answered."""
    hello = await probe.open(BATCH_REVISION)
    if hello.protocol_version != BATCH_REVISION:
        raise NotOffered(f"answers {hello.protocol_version}; batches are {BATCH_REVISION} only")
    assert probe.session is not None
    second = p.TOOLS_LIST if isinstance(hello.capabilities.get("tools"), dict) else p.PING
    outcomes = await probe.session.core.request_batch([(p.PING, None), (second, None)], limit=BATCH_WAIT)
    errors = [o for o in outcomes if isinstance(o, ClientError)]
    if len(errors) == len(outcomes):
        if all(isinstance(e, RequestTimeout) for e in errors):
            raise NotOffered(f"no answer to a batch within {BATCH_WAIT:g} s")
        raise NotOffered(f"a batch is refused: {failure_of(errors[0])}")
    if errors:
        raise Failed(f"{len(errors)} of {len(outcomes)} batched requests unanswered: {failure_of(errors[0])}")
    return f"ping and {second} in one batch, both answered"


async def resumption(probe: Probe) -> str:
    """The POST stream of trigger-long-running-operation is dropped after its first event; the
    client resumes with Last-Event-ID and gets every progress notification once, and the answer."""
    assert probe.session is not None
    link = probe.session.http_link
    if link is None:
        raise NotOffered("streamable HTTP only")
    if p.is_modern(probe.revision):
        raise NotOffered(f"{probe.revision} has no Last-Event-ID")
    await probe.tool(LONG_RUNNING, takes=("duration", "steps"))
    steps = 4
    ids: list[int] = []
    mark, seen = len(probe.arrivals), len(probe.seen)
    link.cut_after = 1
    try:
        await probe.call_tool(LONG_RUNNING, {"duration": 1, "steps": steps}, progress=True, sent=ids.append)
    except ClientError as exc:
        raise Failed(f"after the drop: {failure_of(exc)}") from None
    cut = link.cut_after is None
    link.cut_after = None
    arrived = probe.arrivals[mark:]
    if not cut:
        on_sse = [a for a in arrived if a.meta.get("stream") == "post" and "event_id" in a.meta]
        if not on_sse:
            raise NotOffered("the answer came as JSON, not on a stream")
        raise NotOffered("the stream's events carry no ids: nothing to resume from")
    if not any(a.meta.get("resumed") for a in arrived):
        raise Failed("the answer came without the stream being resumed")
    values = [n.get("progress") for n in probe.notes(p.PROGRESS, seen) if n.get("progressToken") in ids]
    # Whether every progress notification came is the progress scenario's question; here:
    # nothing replayed twice and nothing skipped across the cut.
    if values != list(range(1, len(values) + 1)):
        raise Failed(f"progress across the cut: {values}, not 1, 2, ... once each")
    return f"cut, resumed: {len(values)} progress once, the answer"


async def delete(probe: Probe) -> str:
    """DELETE ends the session: the next request with its id is answered 404."""
    assert probe.session is not None
    link = probe.session.http_link
    if link is None:
        raise NotOffered("streamable HTTP only")
    if link.session_id is None:
        raise NotOffered("the server keeps no sessions")
    status = await link.end_session()
    if status == 405:
        raise NotOffered("the server does not let clients end sessions (405)")
    if status is None or not 200 <= status < 300:
        raise Failed(f"DELETE answered HTTP {status}")
    try:
        await probe.request(p.PING, limit=5.0)
    except HttpError as exc:
        if exc.status == 404:
            return f"DELETE -> {status}, then 404 for the session"
        raise Failed(f"after DELETE: HTTP {exc.status}, not 404") from None
    except ClientError as exc:
        raise Failed(f"after DELETE: {failure_of(exc)}") from None
    raise Failed(f"DELETE answered {status}, but the session still answers ping")
