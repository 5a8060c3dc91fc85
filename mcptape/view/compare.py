"""Two sessions side by side, exchange by exchange, with `mcptape replay`'s comparison.

The left session plays the recording and the right one the replay: each client request
of the left is compared with the right's request of the same rank, after the replay's
normalisation (timestamps, minted ids and UUIDs left out), by
:func:`mcptape.replay.compare.compare_tapes`; nothing here compares on its own. Given
only a replay, its original is the left side.
"""

from __future__ import annotations

from typing import Any, Final

from mcptape.replay.compare import MATCH
from mcptape.replay.matchers import ABSENT
from mcptape.replay.tape import Exchange, Tape

EXCERPT_MAX: Final = 2000
DIFFERENCES_MAX: Final = 50


def _excerpt(value: Any) -> str | None:
    if value is None:
        return None
    import json

    # The standard library writes what orjson refuses (a lone surrogate); the route escapes it.
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= EXCERPT_MAX else text[: EXCERPT_MAX - 1] + "…"


def _side(exchange: Exchange | None) -> dict[str, Any] | None:
    if exchange is None:
        return None
    response = exchange.response
    body = None
    if response is not None:
        body = response.get("error") if "error" in response else response.get("result")
    return {
        "method": exchange.method,
        "subject": exchange.subject,
        "id": exchange.request.get("id"),
        "error": response is not None and "error" in response,
        "response": _excerpt(body),
        "notifications": len(exchange.notifications),
        "server_requests": len(exchange.server_calls),
    }


def _shown(value: Any) -> Any:
    return None if value is ABSENT else value


def compare_sessions(store: Any, left_ref: str | None, right_ref: str) -> dict[str, Any]:
    """The comparison of two sessions (references as `show` takes them); ``left_ref`` None: the
    original of the replay ``right_ref``. Raises TapeError (one line) for a session not found."""
    from mcptape.replay.compare import compare_tapes
    from mcptape.replay.normalise import Normaliser
    from mcptape.replay.tape import TapeError, load_session

    right = load_session(store, right_ref)
    if left_ref is None:
        original = _replay_of(store, right)
        if original is None:
            raise TapeError(f"{right.source} is not a replay: name the session to compare it with")
        left_ref = original
    left = load_session(store, left_ref)
    results = compare_tapes(left, right, Normaliser())
    rows = []
    for i, result in enumerate(results):
        other = right.exchanges[i] if i < len(right.exchanges) else None
        rows.append(
            {
                "index": result.index,
                "status": result.status,
                "left": _side(left.exchanges[i]),
                "right": _side(other),
                "differences": [
                    {
                        "pointer": d.pointer or "/",
                        "left": _shown(d.recorded),
                        "right": _shown(d.replayed),
                        "left_absent": d.recorded is ABSENT,
                        "right_absent": d.replayed is ABSENT,
                    }
                    for d in result.differences[:DIFFERENCES_MAX]
                ],
            }
        )
    for extra in right.exchanges[len(left.exchanges) :]:
        rows.append(
            {"index": extra.index, "status": "extra", "left": None, "right": _side(extra), "differences": []}
        )
    matched = sum(1 for r in results if r.status == MATCH)
    return {
        "left": _about(left),
        "right": _about(right),
        "summary": f"{matched}/{len(results)} exchanges match",
        "matched": matched,
        "total": len(results),
        "rows": rows,
    }


def _about(tape: Tape) -> dict[str, Any]:
    return {"id": tape.session_id, "name": tape.name, "source": tape.source, "exchanges": len(tape.exchanges)}


def _replay_of(store: Any, tape: Tape) -> str | None:
    from sqlalchemy import select

    from mcptape.store.queries import connect
    from mcptape.store.schema import sessions

    with connect(store) as conn:
        return conn.execute(select(sessions.c.replay_of).where(sessions.c.id == tape.session_id)).scalar()
