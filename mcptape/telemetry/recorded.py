"""A recorded session as OpenTelemetry spans and metrics (``mcptape export --format otlp``).

The same operations, attributes and histograms as ``--otlp`` makes live
(:mod:`mcptape.telemetry.conventions`), read from the ``exchanges`` and ``messages``
views instead of paired frame by frame. A request without a reply ends where a
``notifications/cancelled`` cancelled it (``error.type cancelled``) or with the session
(``no_response``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mcptape.store import traffic
from mcptape.telemetry.conventions import Operation, SessionFacts, begin
from mcptape.telemetry.facts import reply_facts, request_facts, slim
from mcptape.wire.frame import KEEP_PARSED_BYTES, parse
from mcptape.wire.ids import encode_id, id_key
from mcptape.wire.protocol import CANCELLED

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, RowMapping

    from mcptape.telemetry.pipeline import Destination


def _message(text: str | None) -> Any:
    if text is None:
        return None
    data = text.encode("utf-8", "surrogatepass")
    msg = slim(data) if len(data) > KEEP_PARSED_BYTES else parse(data)
    return msg if isinstance(msg, (dict, list)) else None


def session_facts(conn: Connection, row: RowMapping) -> SessionFacts:
    """What the session row (and its HTTP frames) say of the session."""
    return SessionFacts(
        mode=row["mode"],
        transport=row["transport"] or "",
        upstream=row["upstream"] or "",
        recording_id=row["id"],
        mcp_session_id=traffic.http_session_id(conn, row["id"]),
        protocol_version=row["protocol_version"],
    )


def operations(conn: Connection, row: RowMapping, session: SessionFacts) -> Iterator[Operation]:
    """Every notification, then every exchange of the recorded session, as operations."""
    cancels: dict[tuple[str, str], float] = {}
    last = row["ended_at"] or row["started_at"]
    for n in traffic.notifications(conn, row["id"]):
        msg = _message(n["text"])
        facts = request_facts(msg)
        last = max(last, n["ts"])
        if n["method"] == CANCELLED and isinstance(facts.cancels, (str, int)):
            cancels.setdefault((n["direction"], id_key(encode_id(facts.cancels))), n["ts"])
        yield begin(n["method"], n["direction"], n["ts"], facts, session, notification=True)
    for x in traffic.exchanges(conn, row["id"]):
        yield _exchange(x, session, cancels, last)


def _exchange(
    x: RowMapping, session: SessionFacts, cancels: dict[tuple[str, str], float], last: float
) -> Operation:
    facts = request_facts(_message(x["request"]))
    op = begin(
        x["method"] or "", x["direction"], x["requested_at"], facts, session,
        rpc_id=x["rpc_id"], answered_by=x["answered_by"],
    )  # fmt: skip
    if x["responded_at"] is None:
        cancelled = cancels.get((x["direction"], id_key(x["rpc_id"]))) if x["rpc_id"] else None
        op.end = max(cancelled if cancelled is not None else last, op.start)
        op.error_type = "cancelled" if cancelled is not None else "no_response"
        return op
    op.end = max(x["responded_at"], op.start)
    reply = reply_facts(_message(x["response"]), op.method)
    if x["is_error"] and reply.error_type is None:
        code = x["error_code"]
        reply.code = str(code) if isinstance(code, int) else None
        reply.error_type = reply.code or "_OTHER"
    op.error_type, op.error_code = reply.error_type, reply.code
    op.error_message = reply.message or (x["error_message"] if isinstance(x["error_message"], str) else None)
    return op


def export_session(
    conn: Connection, row: RowMapping, destination: Destination, batch: int = 512
) -> tuple[int, bool]:
    """Export one recorded session's spans and metrics; how many spans, and whether all got there.

    The first batch the destination does not take ends the export (a receiver that is
    down, after its retries, would only make each later batch wait out its own too):
    its failure is the one the destination reports.
    """
    from mcptape.telemetry.pipeline import Pipeline

    session = session_facts(conn, row)
    pipeline = Pipeline(destination)
    count = 0
    try:
        for op in operations(conn, row, session):
            pipeline.add(op)
            if pipeline.waiting >= batch:
                sent, good = pipeline.export_spans()
                count += sent
                if not good:
                    return count, False
        if row["ended_at"] is not None:
            pipeline.add_session(session, row["ended_at"] - row["started_at"], row["status"])
        sent, good = pipeline.export_spans()
        count += sent
        if not good:
            return count, False
        ok = pipeline.export_metrics()
    finally:
        pipeline.close()
    return count, ok
