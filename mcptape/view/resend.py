"""Edit and resend: a recorded request as the client page opens it, and the new answer beside the old.

:func:`recorded_request` reads a client request of any session with the answer it got
and the registry entry it went to (the session's name, when the registry has it). The
page fills its form with the request's params, a person edits and sends them, and
:func:`compare_answer` compares the new answer with the recorded one exactly as
`mcptape replay` compares an exchange (:func:`mcptape.replay.compare.compare_response`,
its normalisation included: timestamps, minted ids and UUIDs left out).
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from sqlalchemy import select

from mcptape.replay.compare import compare_response
from mcptape.replay.normalise import Normaliser
from mcptape.replay.tape import Exchange
from mcptape.store.queries import connect
from mcptape.store.schema import frames
from mcptape.view.data import NotFound, session_row
from mcptape.wire.protocol import HELLO_METHODS

NOT_RESENT: Final = HELLO_METHODS


def _message(text: str | None) -> Any:
    try:
        return orjson.loads(text) if text else None
    except orjson.JSONDecodeError:
        return None


def recorded_request(store: Any, session_id: str, seq: int, registry: set[str]) -> dict[str, Any]:
    """The client request recorded as frame ``seq``: method, params (without ``_meta``), the recorded
    answer (``{"result"}`` or ``{"error"}``, None if it had none), the registry entry to send it to."""
    with connect(store) as conn:
        session = session_row(conn, session_id)
        row = (
            conn.execute(
                select(frames.c.text, frames.c.direction, frames.c.kind).where(
                    frames.c.session_id == session_id, frames.c.seq == seq
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            raise NotFound(f"no frame {seq} in session {session_id[:12]}")
        answer = conn.execute(
            select(frames.c.text)
            .where(
                frames.c.session_id == session_id, frames.c.request_seq == seq, frames.c.direction == "s2c"
            )
            .order_by(frames.c.seq)
            .limit(1)
        ).scalar()
    message = _message(row["text"])
    if row["direction"] != "c2s" or row["kind"] != "request" or not isinstance(message, dict):
        raise NotFound(f"frame {seq} is not a request the client sent")
    method = message.get("method")
    if not isinstance(method, str) or method in NOT_RESENT:
        raise NotFound(f"frame {seq} ({method}) is the handshake: the client page negotiates by itself")
    params = message.get("params")
    params = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, dict) else {}
    reply = _message(answer)
    recorded = None
    if isinstance(reply, dict):
        recorded = {k: v for k, v in reply.items() if k in ("result", "error")} or None
    name = session.get("name")
    return {
        "sessionId": session_id,
        "seq": seq,
        "method": method,
        "params": params,
        "request": message,
        "recorded": recorded,
        "server": name if isinstance(name, str) and name in registry else None,
        "sessionName": name,
        "upstream": session.get("upstream"),
    }


def compare_answer(request: dict[str, Any], recorded: dict[str, Any] | None, answer: Any) -> dict[str, Any]:
    """The new ``answer`` (``{"result"}`` or ``{"error"}``) against the ``recorded`` one, as replay
    compares: ``{"status": "match" | "differs" | "no response", "differences": [...]}``."""
    old = Exchange(1, request, {"jsonrpc": "2.0", "id": request.get("id"), **recorded} if recorded else None)
    new_body = (
        {k: v for k, v in answer.items() if k in ("result", "error")} if isinstance(answer, dict) else {}
    )
    new = Exchange(1, request, {"jsonrpc": "2.0", "id": request.get("id"), **new_body} if new_body else None)
    outcome = compare_response(Normaliser(), old, new)
    return {
        "status": outcome.status,
        "differences": [
            {"pointer": d.pointer, "recorded": d.recorded, "now": d.replayed} for d in outcome.differences
        ],
    }
